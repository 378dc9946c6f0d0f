"""The tfrecord-io command on the object stores besides S3 (whose own suite is
test_cli_s3.py): ``az://`` on Azurite and ``gs://`` on fake-gcs-server (conftest.py's
``azure_env`` and ``gcs_env``), in this process and as a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
import stores
from image_trees import png, spark_conversion_matches_local

from tfrecord_io import cli, fs, records


@pytest.fixture(params=stores.params("az", "gs"))
def base(request) -> str:
    """A fresh prefix of the store under test, its environment set for the test."""
    return f"{stores.root(request, request.param)}/cli/{uuid.uuid4().hex[:8]}"


def test_images_converted_to_the_store_are_counted_and_verified(tmp_path, capsys, base):
    for label, name in enumerate(("cat", "dog")):
        (tmp_path / "tree" / name).mkdir(parents=True)
        for i in range(3):
            (tmp_path / "tree" / name / f"{i}.png").write_bytes(png(40 * label + i))
    out = f"{base}/images"
    assert cli.main(["images", str(tmp_path / "tree"), out, "--shards", "2"]) == 0
    assert fs.ls(out) == [f"{out}/labels.txt", f"{out}/train"]
    capsys.readouterr()
    assert cli.main(["count", f"{out}/train"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "6\ttotal"
    assert cli.main(["verify", f"{out}/train"]) == 0


def test_verify_names_the_url_and_offset_of_damage(capsys, base):
    records.write(f"{base}/good.tfrecord", [bytes([i]) * 50 for i in range(10)])
    with fs.open(f"{base}/good.tfrecord") as f:
        data = bytearray(f.read())
    data[66 * 3 + 20] ^= 0xFF  # inside record 3's data
    with fs.open(f"{base}/bad.tfrecord", "wb") as out:
        out.write(bytes(data))
    assert cli.main(["verify", f"{base}/bad.tfrecord"]) == 1
    report = capsys.readouterr().out
    assert f"{base}/bad.tfrecord" in report and "byte offset 198" in report


def test_the_command_reads_the_store_as_a_process_of_its_own(base):
    records.write(f"{base}/a.tfrecord", [b"x" * 10] * 7)
    done = subprocess.run([sys.executable, "-m", "tfrecord_io.cli", "count", base],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"7\t{base}/a.tfrecord\n", "")


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
