"""The tfrecord-io command on s3:// URLs of the real test S3 server (conftest.py's ``s3``),
configured the standard AWS way (``s3_env``): what only S3 has, a conversion by Spark through
S3A and a missing bucket. What the command does alike on every store is in
test_cli_stores.py."""

from __future__ import annotations

import uuid

import pytest
from image_trees import spark_conversion_matches_local

from tfrecord_io import cli


@pytest.fixture
def base(s3_env, s3_bucket) -> str:
    return f"s3://{s3_bucket}/cli/{uuid.uuid4().hex[:8]}"


def test_images_with_spark_writes_to_s3_what_the_local_conversion_writes(
    spark, spark_master, tmp_path, base
):
    spark_conversion_matches_local(tmp_path, f"{base}/spark-images", spark_master)


def test_a_missing_bucket_is_a_usage_error_naming_it(capsys, base):
    assert cli.main(["head", "s3://no-such-bucket-here/data"]) == 2
    assert "bucket 'no-such-bucket-here'" in capsys.readouterr().err
