"""The bundled jar reaches Spark however the user starts it: no --jars, no manual step."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyspark

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
