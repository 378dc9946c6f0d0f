"""The settings :func:`tfrecord_io.spark.s3a_conf` gives, read by the Hadoop ``Configuration``
of the running Spark the way each Hadoop's S3A reads them: Hadoop 3.3.4's (pyspark 3.5)
``S3AUtils.initConnectionSettings`` reads the connection timeouts and the attempts with
``getInt``; Hadoop 3.4's and later (pyspark 4) ``AWSClientConfig`` reads the timeouts with
``getTimeDuration``, milliseconds when no unit is given, and the attempts with ``getInt``. No
connector and no S3 server needed: it runs on pyspark 4 and on pyspark 3.5 alike."""

from __future__ import annotations

from tfrecord_io import spark as tfs
from tfrecord_io.fs.s3 import S3FileSystem


def _hadoop_conf(spark, settings: dict[str, str]):
    jvm = spark.sparkContext._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(False)
    for key, value in settings.items():
        conf.set(key, value)
    return conf


def test_s3as_timeouts_read_as_milliseconds_by_getint_and_by_gettimeduration(spark):
    s3 = S3FileSystem(endpoint_url="http://store.internal:9000", connect_timeout=20.5,
                      request_timeout=30, max_attempts=3)
    conf = _hadoop_conf(spark, tfs.s3a_conf(s3.settings(), prefix=""))
    milliseconds = spark.sparkContext._jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    for key, expected in (("fs.s3a.connection.establish.timeout", 20500),
                          ("fs.s3a.connection.timeout", 30000)):
        assert conf.getInt(key, -1) == expected  # Hadoop 3.3.4's S3A
        assert conf.getTimeDuration(key, -1, milliseconds, milliseconds) == expected  # 3.4+
    assert conf.getInt("fs.s3a.attempts.maximum", -1) == 2
