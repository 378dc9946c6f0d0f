"""The bundled jar reaches Spark however the user starts it: no --jars, no manual step."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pyspark
import pytest

from tfrecord_io import spark as tfs

SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    from tfrecord_io import spark as tfs

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")\\
        .getOrCreate()
    out = sys.argv[1]
    tfs.save_records(spark.sparkContext.parallelize([b"a", b"bc"], 1), out)
    print("LOADED", sorted(tfs.load_records(spark, out).collect()))
    spark.stop()
    """
)


def run(command: list[str], tmp_path: Path) -> str:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_session_started_without_the_jar_gets_it_on_first_use(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    out = run([sys.executable, str(script), str(tmp_path / "out")], tmp_path)
    assert "LOADED [b'a', b'bc']" in out


def test_spark_submit_job_needs_no_jars_flag(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    out = run([str(spark_submit), "--master", "local[1]", str(script), str(tmp_path / "out")],
              tmp_path)
    assert "LOADED [b'a', b'bc']" in out


SETTINGS_SCRIPT = textwrap.dedent(
    """
    from tfrecord_io import spark as tfs

    spark = tfs.session("local[1]", **{"spark.ui.enabled": "false"})
    conf = spark.sparkContext.getConf()
    print("JARS", conf.get("spark.jars"))
    print("REGEX", conf.get("spark.redaction.regex"))
    spark.stop()
    """
)


def _empty_jar(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return path


def _settings(out: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in out.splitlines()
                if line.startswith(("JARS ", "REGEX ")))


def test_session_keeps_the_jars_and_redaction_of_spark_defaults(tmp_path, monkeypatch):
    theirs = _empty_jar(tmp_path / "theirs.jar")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text(
        f"# the team's defaults\nspark.jars  {theirs}\nspark.redaction.regex=(?i)pepper\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    script = tmp_path / "job.py"
    script.write_text(SETTINGS_SCRIPT)
    settings = _settings(run([sys.executable, str(script)], tmp_path))
    assert str(theirs) in settings["JARS"] and tfs.jar_path() in settings["JARS"]
    assert settings["REGEX"] == f"(?:(?i)pepper)|(?:{tfs.REDACTION_REGEX})"


ABFS_SETTINGS_SCRIPT = textwrap.dedent(
    """
    from tfrecord_io import spark as tfs
    from tfrecord_io.fs.azure import AzureFileSystem

    azure = AzureFileSystem(account_name="acct", account_key="a2V5").settings()
    spark = tfs.session("local[1]", **tfs.abfs_conf(azure), **{"spark.ui.enabled": "false"})
    print("REGEX", spark.sparkContext.getConf().get("spark.redaction.regex"))
    spark.stop()
    """
)


def test_session_with_abfs_conf_keeps_the_redaction_of_spark_defaults(tmp_path, monkeypatch):
    # abfs_conf() gives REDACTION_REGEX, which must add to the team's regex, not replace it:
    # their secrets would show in clear in Spark's UI and event logs.
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text("spark.redaction.regex (?i)pepper\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    script = tmp_path / "job.py"
    script.write_text(ABFS_SETTINGS_SCRIPT)
    settings = _settings(run([sys.executable, str(script)], tmp_path))
    assert settings["REGEX"] == f"(?:(?i)pepper)|(?:{tfs.REDACTION_REGEX})"


def test_session_under_spark_submit_keeps_its_jars(tmp_path):
    theirs = _empty_jar(tmp_path / "theirs.jar")
    script = tmp_path / "job.py"
    script.write_text(SETTINGS_SCRIPT)
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    settings = _settings(run([str(spark_submit), "--master", "local[1]", "--jars", str(theirs),
                              str(script)], tmp_path))
    assert str(theirs) in settings["JARS"] and tfs.jar_path() in settings["JARS"]
    assert settings["REGEX"] == tfs.REDACTION_REGEX


WORKER_PYTHON_SCRIPT = textwrap.dedent(
    """
    import sys
    from tfrecord_io import spark as tfs

    spark = tfs.session("local[1]", **{"spark.ui.enabled": "false"})
    workers = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable)
    print("WORKER", workers.collect()[0])
    print("DRIVER", sys.executable)
    spark.stop()
    """
)


def without_venv_on_path(env: dict[str, str]) -> dict[str, str]:
    """The environment of a shell where no virtual environment is activated."""
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in env.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                                                     "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep) if d and os.path.abspath(d) != venv_bin
    )
    return env


def test_local_session_runs_python_workers_in_the_drivers_interpreter(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(WORKER_PYTHON_SCRIPT)
    env = without_venv_on_path(dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines()
                 if line.startswith(("WORKER ", "DRIVER ")))
    assert lines["DRIVER"] == sys.executable
    assert lines["WORKER"] == sys.executable


BARE_EXECUTORS_SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import Row
    from tfrecord_io import spark as tfs

    out = sys.argv[2]
    spark = tfs.session("local-cluster[2,1,1024]", **{
        "spark.pyspark.python": sys.argv[1],
        "spark.ui.enabled": "false",
        "spark.executor.memory": "1g",
        "spark.driver.host": "127.0.0.1",
    })
    sc = spark.sparkContext

    def probe(_):
        import sys
        try:
            import tfrecord_io  # noqa: F401 - the import is the probe
            found = "importable"
        except ModuleNotFoundError:
            found = "missing"
        return sys.executable + " " + found

    print("EXECUTOR", sorted(set(sc.parallelize(range(4), 4).map(probe).collect())))
    records = [b"a", bytearray(b"bc"), memoryview(b"def"), b""]
    tfs.save_records(sc.parallelize(records, 2), out + "/records")
    print("RECORDS", sorted(tfs.load_records(sc, out + "/records").collect()))
    rows = spark.createDataFrame([Row(id=1, name="x"), Row(id=2, name="yz")])
    tfs.save_dataframe(rows, out + "/frame")
    back = tfs.load_dataframe(spark, out + "/frame", schema="id BIGINT, name STRING")
    print("ROWS", sorted((r.id, r.name) for r in back.collect()))
    rows.write.format("tfrecord").save(out + "/source")
    read = spark.read.format("tfrecord").load(out + "/source")
    print("SOURCE", sorted((r.id, r.name) for r in read.collect()), read.count())
    spark.stop()
    """
)


@pytest.fixture(scope="session")
def python_without_tfrecord_io(tmp_path_factory) -> str:
    """A plain virtual environment (no pip, no site packages of ours): its interpreter lacks
    tfrecord_io and every dependency of it, pyspark included."""
    venv = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import tfrecord_io"], capture_output=True,
                           text=True, timeout=60, cwd=venv, env=without_venv_on_path(os.environ))
    assert "No module named 'tfrecord_io'" in probe.stderr
    return str(python)


def test_every_spark_helper_runs_on_executors_without_tfrecord_io(
    tmp_path, python_without_tfrecord_io
):
    script = tmp_path / "job.py"
    script.write_text(BARE_EXECUTORS_SCRIPT)
    env = without_venv_on_path(dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    result = subprocess.run(
        [sys.executable, str(script), python_without_tfrecord_io, str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    assert f"EXECUTOR ['{python_without_tfrecord_io} missing']" in result.stdout
    assert "RECORDS [b'', b'a', b'bc', b'def']" in result.stdout
    assert "ROWS [(1, 'x'), (2, 'yz')]" in result.stdout
    assert "SOURCE [(1, 'x'), (2, 'yz')] 2" in result.stdout


CONNECT_MODE_SCRIPT = textwrap.dedent(
    """
    import sys
    from tfrecord_io import spark as tfs

    spark = tfs.session("local[1]", **{"spark.api.mode": "connect"})
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, name string")
    tfs.save_dataframe(df, sys.argv[1])
    back = tfs.load_dataframe(spark, sys.argv[1])
    print("CONNECT", type(spark).__module__, sorted(tuple(r) for r in back.collect()))
    spark.stop()
    """
)


def test_session_in_pysparks_connect_api_mode_is_a_connect_session_with_the_jar(tmp_path):
    # spark.api.mode=connect (or SPARK_API_MODE=connect): the builder starts a local Connect
    # server in this process and returns its client session, which has no sparkContext.
    pytest.importorskip("grpc")
    if int(pyspark.__version__.split(".")[0]) < 4:
        pytest.skip("spark.api.mode is pyspark 4's")
    script = tmp_path / "job.py"
    script.write_text(CONNECT_MODE_SCRIPT)
    out = run([sys.executable, str(script), str(tmp_path / "out")], tmp_path)
    assert "CONNECT pyspark.sql.connect.session [(1, 'a'), (2, 'b')]" in out


RESTART_SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    from tfrecord_io import spark as tfs

    for i in range(2):
        # Two applications in turn, in one driver JVM, each with its own executor JVM.
        spark = SparkSession.builder.master("local-cluster[1,1,1024]")\\
            .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")\\
            .config("spark.executor.memory", "1g").getOrCreate()
        out = f"{sys.argv[1]}/{i}"
        tfs.save_records(spark.sparkContext.parallelize([b"a", b"bc"], 1), out)
        print("LOADED", i, sorted(tfs.load_records(spark, out).collect()))
        spark.stop()
    """
)


def test_a_later_application_of_the_same_driver_ships_the_jar_to_its_executors(tmp_path):
    # The first application's ensure_jar put the jar on the driver JVM's class path, which
    # outlives it: the next one must still send the jar to its own executors.
    script = tmp_path / "job.py"
    script.write_text(RESTART_SCRIPT)
    out = run([sys.executable, str(script), str(tmp_path / "out")], tmp_path)
    assert "LOADED 0 [b'a', b'bc']" in out
    assert "LOADED 1 [b'a', b'bc']" in out
