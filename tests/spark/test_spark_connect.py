"""What a Spark Connect client gets from tfrecord_io.spark beyond the data source (which
tests/spark/test_source.py and test_dataframe.py run on both sessions): a client session from
``session(remote=...)``, and the RDD helpers refusing Connect sessions with the DataFrame
equivalent in the message, which works.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tfrecord_io import example as ex
from tfrecord_io import records
from tfrecord_io import spark as tfs
from tfrecord_io.errors import SparkConnectError


def test_session_with_remote_is_a_client_of_that_server(connect_server, tmp_path):
    # In a fresh process, as a user's: pyspark refuses a remote session beside a classic one,
    # which this test process may hold.
    program = (
        "from tfrecord_io import spark as tfs\n"
        f"spark = tfs.session(remote={connect_server.url!r})\n"
        "df = spark.createDataFrame([(1, 'a'), (2, 'b')], 'id long, name string')\n"
        f"tfs.save_dataframe(df, {str(tmp_path / 'out')!r})\n"
        f"back = tfs.load_dataframe(spark, {str(tmp_path / 'out')!r})\n"
        "print(type(spark).__module__, sorted(tuple(r) for r in back.collect()))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split(" ", 1) == ["pyspark.sql.connect.session",
                                         "[(1, 'a'), (2, 'b')]\n"]


def test_session_takes_a_master_or_a_remote_not_both():
    with pytest.raises(ValueError, match="either master"):
        tfs.session("local[1]", remote="sc://127.0.0.1:1")


def test_save_records_of_a_connect_dataframe_names_the_dataframe_equivalent(connect_spark,
                                                                             tmp_path):
    df = connect_spark.createDataFrame([(b"a",), (b"b",)], "data binary")
    with pytest.raises(SparkConnectError, match=r"record_type='ByteArray'"):
        tfs.save_records(df, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    tfs.save_dataframe(df, tmp_path / "out", record_type="ByteArray")
    assert sorted(r for p in (tmp_path / "out").glob("part-*") for r in records.read(str(p))) \
        == [b"a", b"b"]


def test_load_records_of_a_connect_session_names_the_dataframe_equivalent(connect_spark,
                                                                           tmp_path):
    records.write(str(tmp_path / "in.tfrecord"), [ex.encode_example({"x": [1]}), b"raw"])
    with pytest.raises(SparkConnectError, match=r"load_dataframe\(spark, path, "
                                                r"record_type='ByteArray'\)"):
        tfs.load_records(connect_spark, str(tmp_path / "in.tfrecord"))
    back = tfs.load_dataframe(connect_spark, tmp_path / "in.tfrecord", record_type="ByteArray")
    assert sorted(r.byte_array for r in back.collect()) == sorted(
        [ex.encode_example({"x": [1]}), b"raw"])


def test_spark_connect_error_is_a_type_error():
    assert issubclass(SparkConnectError, TypeError)


def test_a_connect_server_whose_jar_is_missing_says_which_artifact_to_fetch(tmp_path):
    import pyspark

    from tfrecord_io.testing import connect  # here: importing it marks a module's tests connect

    artifact = connect.server_jar_name().rsplit("-", 1)[0]  # spark-connect_2.12 on pyspark 3.5
    server = connect.ConnectServer(tmp_path, server_jar=tmp_path / "missing.jar")
    with pytest.raises(connect.ConnectServerError) as info:
        server.start()
    assert f"org.apache.spark:{artifact}:{pyspark.__version__} " in str(info.value)
    assert "make setup-spark35" in str(info.value) and "missing.jar" in str(info.value)
    assert not server.running
