"""tfrecord_io.spark.object_stores: S3A's settings made from the ones tfrecord-io's ``s3://``
resolves (the AWS environment, or a registered S3FileSystem), and the hadoop-aws to add; ABFS's
from the ones ``az://`` and ``abfs://`` resolve; Google's Cloud Storage connector's from the ones
``gs://`` resolves. No Spark started (tests/spark/test_spark_s3.py, test_spark_azure.py and
test_spark_gcs.py run them on the test servers)."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pyspark
import pytest

from tfrecord_io import fs
from tfrecord_io import spark as tfs
from tfrecord_io.fs.azure import AzureFileSystem
from tfrecord_io.fs.gcs import GcsFileSystem
from tfrecord_io.fs.s3 import S3FileSystem


@pytest.fixture
def aws_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("AWS_", "TFRECORD_IO_S3_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://store.internal:9000/")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
    monkeypatch.setenv("TFRECORD_IO_S3_CONNECT_TIMEOUT", "20.5")
    return monkeypatch


def test_an_s3_compatible_endpoint_from_the_environment_becomes_s3as_with_path_style(aws_env):
    conf = tfs.s3a_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://store.internal:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"
    assert conf["spark.hadoop.fs.s3a.connection.establish.timeout"] == "20500"  # milliseconds
    assert conf["spark.hadoop.fs.s3a.connection.timeout"] == "30000"
    assert conf["spark.hadoop.fs.s3a.attempts.maximum"] == "2"  # retries after the first


def test_s3_urls_are_served_by_s3a_in_spark(aws_env):
    conf = tfs.s3a_conf(prefix="")
    assert conf["fs.s3.impl"] == tfs.S3A_FILE_SYSTEM == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["fs.AbstractFileSystem.s3.impl"] == "org.apache.hadoop.fs.s3a.S3A"


def test_s3_writes_go_through_s3as_magic_committer_and_the_jars_commit_protocol(aws_env):
    conf = tfs.s3a_conf()
    assert conf["spark.hadoop.fs.s3a.committer.name"] == "magic"
    assert conf["spark.hadoop.fs.s3a.committer.magic.track.commits.in.memory.enabled"] == "true"
    for scheme in ("s3a", "s3"):
        assert conf[f"spark.hadoop.mapreduce.outputcommitter.factory.scheme.{scheme}"] == \
            "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory"
    # a Spark setting, not a Hadoop one: never under spark.hadoop.
    assert conf["spark.sql.sources.commitProtocolClass"] == tfs.COMMIT_PROTOCOL == \
        "org.tfrecordio.spark.PathOutputCommitProtocol"
    assert tfs.s3a_conf(prefix="")["spark.sql.sources.commitProtocolClass"] == tfs.COMMIT_PROTOCOL


def test_the_file_committer_leaves_sparks_own_commit_protocol(aws_env):
    conf = tfs.s3a_conf(committer="file")
    assert conf["spark.hadoop.fs.s3a.committer.name"] == "file"
    assert "spark.sql.sources.commitProtocolClass" not in conf
    with pytest.raises(ValueError, match="committer must be one of"):
        tfs.s3a_conf(committer="directory")


def test_a_connect_timeout_below_s3as_least_is_raised_to_it(aws_env):
    aws_env.setenv("TFRECORD_IO_S3_CONNECT_TIMEOUT", "2")
    assert tfs.s3a_conf(prefix="")["fs.s3a.connection.establish.timeout"] == "15000"


# How S3A reads its settings. Hadoop 3.3.4 (pyspark 3.5): S3AUtils.initConnectionSettings reads
# both timeouts and the attempts with Configuration.getInt, which takes a decimal int (or 0x hex)
# and nothing else. Hadoop 3.4 and later (pyspark 4: 3.5.0): AWSClientConfig reads the timeouts
# with Configuration.getTimeDuration, default unit milliseconds, and the attempts with getInt.
_JAVA_INT = re.compile(r"[+-]?\d+")
_DURATION = re.compile(r"(\d+)(ns|us|ms|s|m|h|d)?")
_S3A_TIMEOUTS = ("fs.s3a.connection.establish.timeout", "fs.s3a.connection.timeout")


def _get_int(value: str) -> int:
    assert _JAVA_INT.fullmatch(value.strip()), f"getInt refuses {value!r}"
    number = int(value)
    assert -(2**31) <= number < 2**31, f"getInt refuses {value!r}: beyond a Java int"
    return number


def _get_milliseconds(value: str) -> float:
    found = _DURATION.fullmatch(value.strip())
    assert found, f"getTimeDuration refuses {value!r}"
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4, "h": 3.6e6, "d": 8.64e7}
    return int(found.group(1)) * scale[found.group(2) or "ms"]


@pytest.mark.parametrize("connect, request_", [("20.5", "30"), ("2", "0.001"),
                                               ("1e9", "1e9")])
def test_s3as_timeouts_read_the_same_under_hadoop_334s_and_35s_rules(aws_env, connect,
                                                                     request_):
    aws_env.setenv("TFRECORD_IO_S3_CONNECT_TIMEOUT", connect)
    aws_env.setenv("TFRECORD_IO_S3_REQUEST_TIMEOUT", request_)
    conf = tfs.s3a_conf(prefix="")
    for key in _S3A_TIMEOUTS:
        assert _get_int(conf[key]) == _get_milliseconds(conf[key]) > 0
    assert _get_int(conf["fs.s3a.attempts.maximum"]) >= 0


def test_credentials_are_passed_only_when_asked(aws_env):
    assert not [k for k in tfs.s3a_conf() if "key" in k or "token" in k]
    conf = tfs.s3a_conf(credentials=True, prefix="")
    keys = (conf["fs.s3a.access.key"], conf["fs.s3a.secret.key"])
    assert keys == ("AKIDEXAMPLE", "wJalrXUtnFEMI")
    assert "fs.s3a.session.token" not in conf


def test_a_session_token_brings_s3as_temporary_credentials_provider(aws_env):
    aws_env.setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzE")
    conf = tfs.s3a_conf(credentials=True, prefix="")
    assert conf["fs.s3a.session.token"] == "FQoGZXIvYXdzE"
    assert conf["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")


def test_on_aws_itself_no_endpoint_is_set_and_buckets_are_virtual_hosted(aws_env):
    aws_env.delenv("AWS_ENDPOINT_URL_S3")
    aws_env.setenv("AWS_REGION", "eu-west-1")
    conf = tfs.s3a_conf(prefix="")
    assert "fs.s3a.endpoint" not in conf
    assert conf["fs.s3a.path.style.access"] == "false"
    assert conf["fs.s3a.endpoint.region"] == "eu-west-1"


def test_the_registered_s3_file_systems_settings_are_the_ones_passed_on(aws_env):
    registered = S3FileSystem(endpoint_url="https://ceph.internal", addressing="virtual",
                              region="default")
    previous, _ = fs.filesystem("s3://b")
    fs.register("s3", registered, replace=True)
    try:
        conf = tfs.s3a_conf(prefix="")
    finally:
        fs.register("s3", previous, replace=True)
    assert conf["fs.s3a.endpoint"] == "https://ceph.internal"
    assert conf["fs.s3a.connection.ssl.enabled"] == "true"
    assert conf["fs.s3a.path.style.access"] == "false"
    assert conf["fs.s3a.endpoint.region"] == "default"


def test_hadoop_aws_package_is_of_the_hadoop_that_pyspark_bundles():
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars",
                                  "hadoop-client-api-*.jar"))
    version = os.path.basename(jars[0])[len("hadoop-client-api-"):-len(".jar")]
    assert tfs.hadoop_version() == version
    assert tfs.hadoop_aws_package() == f"org.apache.hadoop:hadoop-aws:{version}"


@pytest.fixture
def azure_settings(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("AZURE_", "TFRECORD_IO_AZURE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "myaccount")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "c2VjcmV0")
    return monkeypatch


def test_the_accounts_key_is_passed_under_the_host_abfs_urls_name(azure_settings):
    conf = tfs.abfs_conf(prefix="")
    host = "myaccount.dfs.core.windows.net"
    assert conf[f"fs.azure.account.key.{host}"] == "c2VjcmV0"
    assert conf[f"fs.azure.account.auth.type.{host}"] == "SharedKey"


def test_on_azure_itself_abfs_keeps_its_endpoints_and_finds_the_namespace_itself(azure_settings):
    conf = tfs.abfs_conf(prefix="")
    assert not [k for k in conf if "endpoint" in k or "hns" in k or "service.type" in k]


def test_a_blob_endpoint_alone_is_reached_as_a_flat_namespace_account_over_http(azure_settings):
    azure_settings.setenv("AZURE_STORAGE_BLOB_ENDPOINT", "http://127.0.0.1:10000")
    conf = tfs.abfs_conf(prefix="")
    assert conf["fs.azure.abfs.endpoint"] == "127.0.0.1:10000"
    assert conf["fs.azure.always.use.https"] == "false"
    assert conf["fs.azure.account.hns.enabled"] == "false"
    assert conf["fs.azure.fns.account.service.type"] == "BLOB"
    assert conf["fs.azure.metrics.collection.enabled"] == "false"


def test_abfs_writes_commit_through_the_jars_protocol_and_a_new_session_redacts_the_key(
        azure_settings):
    conf = tfs.abfs_conf()
    assert conf["spark.sql.sources.commitProtocolClass"] == tfs.COMMIT_PROTOCOL
    redacted = re.compile(conf["spark.redaction.regex"])
    assert redacted.search("spark.hadoop.fs.azure.account.key.myaccount.dfs.core.windows.net")
    for spark_default in ("fs.s3a.secret.key", "fs.s3a.access.key", "a.password", "my.token"):
        assert redacted.search(spark_default)
    assert "spark.redaction.regex" not in tfs.abfs_conf(prefix="")  # not in a running session


def test_abfs_needs_the_account(azure_settings):
    azure_settings.delenv("AZURE_STORAGE_ACCOUNT_NAME")
    with pytest.raises(ValueError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        tfs.abfs_conf()


def test_the_registered_azure_file_systems_settings_are_the_ones_passed_on(azure_settings):
    previous, _ = fs.filesystem("abfs://c@a.dfs.core.windows.net/k")
    fs.register(["az", "abfs", "abfss"], AzureFileSystem(account_name="other",
                                                         account_key="b3RoZXI="), replace=True)
    try:
        conf = tfs.abfs_conf(prefix="")
    finally:
        fs.register(["az", "abfs", "abfss"], previous, replace=True)
    assert conf["fs.azure.account.key.other.dfs.core.windows.net"] == "b3RoZXI="


@pytest.mark.parametrize(
    "url, same",
    [
        ("az://data/sets/mnist", "abfs://data@myaccount.dfs.core.windows.net/sets/mnist"),
        ("AZ://data/x", "abfs://data@myaccount.dfs.core.windows.net/x"),
        ("abfs://data/sets/mnist", "abfs://data@myaccount.dfs.core.windows.net/sets/mnist"),
        ("abfss://data/sets/mnist", "abfss://data@myaccount.dfs.core.windows.net/sets/mnist"),
    ],
)
def test_an_azure_url_that_hadoop_cannot_use_maps_to_abfs_with_the_account(
    azure_settings, url, same
):
    assert tfs.abfs_url(url) == same


@pytest.mark.parametrize(
    "url",
    ["abfs://data@other.dfs.core.windows.net/x", "abfss://data@other.dfs.core.windows.net/x",
     "s3://bucket/x", "hdfs://nn:8020/x", "/tmp/x", "gs://bucket/x"],
)
def test_a_url_that_hadoop_names_as_it_is_needs_no_abfs_url(azure_settings, url):
    assert tfs.abfs_url(url) is None


def test_an_abfs_url_without_a_configured_account_names_a_placeholder(azure_settings):
    azure_settings.delenv("AZURE_STORAGE_ACCOUNT_NAME")
    assert tfs.abfs_url("az://data/x") == "abfs://data@ACCOUNT.dfs.core.windows.net/x"


def test_hadoop_azure_package_is_of_the_hadoop_that_pyspark_bundles():
    assert tfs.hadoop_azure_package() == f"org.apache.hadoop:hadoop-azure:{tfs.hadoop_version()}"


@pytest.fixture
def google_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("GOOGLE_", "STORAGE_EMULATOR_HOST", "TFRECORD_IO_GCS_")):
            monkeypatch.delenv(name)
    return monkeypatch


def test_gs_urls_are_served_by_googles_connector_not_hadoops_own(google_env):
    conf = tfs.gcs_conf(prefix="")
    assert conf["fs.gs.impl"] == tfs.GCS_FILE_SYSTEM
    assert conf["fs.AbstractFileSystem.gs.impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"


def test_hadoops_sizes_with_units_are_given_in_bytes(google_env):
    conf = tfs.gcs_conf(prefix="")
    assert conf["fs.gs.block.size"] == str(64 << 20)  # Hadoop 3.5's default says "64m"
    assert all(conf[k].isdigit() for k in conf if k.endswith((".size", ".limit")))


def test_an_emulator_from_the_environment_is_the_root_url_reached_unauthenticated(google_env):
    google_env.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:4443")
    google_env.setenv("GOOGLE_CLOUD_PROJECT", "tests")
    conf = tfs.gcs_conf()
    assert conf["spark.hadoop.fs.gs.storage.root.url"] == "http://127.0.0.1:4443"
    assert conf["spark.hadoop.fs.gs.auth.type"] == "UNAUTHENTICATED"
    assert conf["spark.hadoop.fs.gs.project.id"] == "tests"


def test_on_google_cloud_itself_application_default_credentials_are_used(google_env):
    conf = tfs.gcs_conf(prefix="")
    assert conf["fs.gs.auth.type"] == "APPLICATION_DEFAULT"
    assert "fs.gs.storage.root.url" not in conf and "fs.gs.project.id" not in conf


def test_the_registered_gcs_file_systems_settings_are_the_ones_passed_on(google_env):
    previous, _ = fs.filesystem("gs://b")
    fs.register("gs", GcsFileSystem(emulator="http://gcs.internal:9023", project="p"),
                replace=True)
    try:
        conf = tfs.gcs_conf(prefix="")
    finally:
        fs.register("gs", previous, replace=True)
    assert conf["fs.gs.storage.root.url"] == "http://gcs.internal:9023"
    assert conf["fs.gs.project.id"] == "p"


def test_gs_writes_are_staged_by_file_output_committer_not_hadoops_manifest_committer(google_env):
    conf = tfs.gcs_conf(prefix="")
    assert conf["mapreduce.outputcommitter.factory.scheme.gs"] == \
        "org.apache.hadoop.mapreduce.lib.output.FileOutputCommitterFactory"


def test_the_connector_version_named_is_the_one_the_build_fetches():
    build = (Path(__file__).resolve().parents[2] / "build.sbt").read_text()
    assert f'"gcs-connector" % "{tfs.GCS_CONNECTOR_VERSION}"' in build
