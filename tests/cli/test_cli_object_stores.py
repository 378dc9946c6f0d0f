"""The tfrecord-io command on the object stores besides S3 (whose own suite is
test_cli_s3.py): ``images --spark`` writing through Hadoop's connectors to ``abfs://`` on Azurite
and ``gs://`` on fake-gcs-server (conftest.py's ``azure_env`` and ``gcs_env``). What the command
does alike on every store is in test_cli_stores.py."""

from __future__ import annotations

import uuid

import pytest
from image_trees import spark_conversion_matches_local


@pytest.mark.azure
def test_images_with_spark_writes_to_abfs_what_the_local_conversion_writes(
    spark, spark_master, tmp_path, azure_env, azure_container, azurite
):
    host = f"{azurite.account_name}.dfs.core.windows.net"
    out = f"abfs://{azure_container}@{host}/cli/{uuid.uuid4().hex[:8]}/spark-images"
    spark_conversion_matches_local(tmp_path, out, spark_master)


@pytest.mark.gcs
def test_images_with_spark_writes_to_gcs_what_the_local_conversion_writes(
    spark, spark_master, tmp_path, gcs_env, gcs_bucket
):
    out = f"gs://{gcs_bucket}/cli/{uuid.uuid4().hex[:8]}/spark-images"
    spark_conversion_matches_local(tmp_path, out, spark_master)
