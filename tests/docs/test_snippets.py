"""The documentation's runnable examples, run: every file under ``docs/snippets/`` on the data
the other tests use (the session's Spark application, the test HDFS, the MNIST test set), and
the code blocks of ``README.md``, which must be those files word for word, and the test
PostgreSQL database holding the MNIST test set as images.

The pages include the snippet files (``--8<-- "snippets/NAME"``), so what a reader copies is
what ran here. Snippets name HDFS as ``hdfs://namenode:8020``; the tests replace that with the
test HDFS's URL (or a local directory), and the database as ``jdbc:postgresql://dbhost:5432/postgres``
with the test database's URL, and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SNIPPETS = DOCS / "snippets"
README = ROOT / "README.md"
MNIST = ROOT.parent / "shared" / "data" / "mnist"
PLACEHOLDER_HDFS = "hdfs://namenode:8020"
PLACEHOLDER_JDBC = "jdbc:postgresql://dbhost:5432/postgres"

#: Each snippet file and the test here that runs it.
RUN_BY = {
    "quickstart_mnist.sh": "test_quickstart_mnist_converts_counts_and_verifies_the_test_set",
    "quickstart_spark.py": "test_quickstart_spark_round_trips_records_and_examples_on_hdfs",
    "quickstart_cluster.sh": "test_quickstart_cluster_trains_keras_on_two_workers_from_hdfs",
    "feeding.py": "test_feeding_feeds_two_dataframes_in_turns_in_equal_shares",
    "records_python.py": "test_records_python_writes_and_reads_back_plain_and_gzip_files_on_hdfs",
    "tf_dataset.py": "test_tf_dataset_trains_keras_on_the_mnist_shards_on_hdfs",
    "dataframes.py": "test_dataframes_write_and_read_examples_both_ways",
    "fs_urls.py": "test_fs_urls_writes_lists_expands_and_deletes_on_hdfs",
    "s3_tensorflow.py": "test_s3_tensorflow_writes_lists_and_reads_through_python_and_tensorflow",
    "images.py": "test_images_converts_the_mnist_png_folders_and_tensorflow_decodes_them",
    "jdbc_images.py": "test_jdbc_images_writes_the_table_as_image_shards_on_hdfs",
    "jdbc_feed.py": "test_jdbc_feed_trains_keras_on_two_workers_from_the_table",
}

# A README code block is preceded by one of these comments: the snippet file it is, or why it
# is not a snippet (a command CI runs itself, an install line).
SNIPPET_MARK = re.compile(r"<!-- snippet: (\S+) -->\n```[a-z]*\n(.*?)```", re.DOTALL)
ANY_MARK = re.compile(r"<!-- (?:snippet: \S+|not run: [^>]+) -->\n```")
FENCE_OPEN = re.compile(r"^```[a-z]*$", re.MULTILINE)


def snippet(name: str, hdfs_url: str | None = None, jdbc_url: str | None = None) -> str:
    """The text of ``docs/snippets/NAME``, pointed at *hdfs_url* (an HDFS or a local directory)
    and *jdbc_url* (a database) instead of the placeholders."""
    text = (SNIPPETS / name).read_text()
    text = text.replace(PLACEHOLDER_HDFS, hdfs_url) if hdfs_url else text
    return text.replace(PLACEHOLDER_JDBC, jdbc_url) if jdbc_url else text


def run_python_snippet(name: str, hdfs_url: str | None = None,
                       jdbc_url: str | None = None) -> dict:
    """Run a Python snippet as a script run by ``python`` would; its global names."""
    namespace: dict = {"__name__": "__main__"}  # functions travel by value, as a script's do
    exec(compile(snippet(name, hdfs_url, jdbc_url), str(SNIPPETS / name), "exec"), namespace)
    return namespace


def run_shell_snippet(name: str, cwd: Path, timeout: float, **env: str) -> str:
    """Run a shell snippet with bash (stop at the first failing command) in *cwd*, with this
    interpreter's environment first on ``PATH``; its stdout and stderr together."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", snippet(name, env.get("NN"))],
        cwd=cwd,
        env={**os.environ, "PATH": path, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{name} failed (exit {done.returncode}):\n{output[-5000:]}"
    return output


def test_every_snippet_file_is_run_here_and_shown_on_a_page():
    files = [p.name for p in SNIPPETS.iterdir() if p.is_file()]  # not a __pycache__
    assert sorted(files) == sorted(RUN_BY)
    assert set(RUN_BY.values()) <= set(globals())
    included = "\n".join(p.read_text() for p in DOCS.rglob("*.md"))
    for name in RUN_BY:
        assert f'--8<-- "snippets/{name}"' in included, f"no page includes snippets/{name}"


def test_each_readme_code_block_is_a_snippet_file_or_says_why_not():
    text = README.read_text()
    opening_fences = FENCE_OPEN.findall(text)[::2]  # every other fence opens a block
    assert len(ANY_MARK.findall(text)) == len(opening_fences), (
        "a README code block lacks its <!-- snippet: docs/snippets/NAME --> (or "
        "<!-- not run: why -->) comment on the line before it"
    )
    for path, block in SNIPPET_MARK.findall(text):
        assert (ROOT / path).read_text() == block, f"README's block differs from {path}"


# A docs page's code block (not a ```text one: a layout or an output, nothing to run): a snippet
# included (--8<--), or after one of these comments.
PAGE_BLOCK = re.compile(r"^```(?!text\n)[a-z]+\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PAGE_MARK = re.compile(r"<!-- (?:not run: [^>]+|run by: (\S+)[^>]*) -->\n\n?\Z")


def unmarked_blocks(text: str) -> list[int]:
    """The line numbers of *text*'s code blocks that neither include a snippet nor follow a
    ``<!-- not run: why -->`` or ``<!-- run by: PATH ... -->`` comment."""
    lines = []
    for block in PAGE_BLOCK.finditer(text):
        if block.group(1).lstrip().startswith("--8<--"):
            continue
        mark = PAGE_MARK.search(text, 0, block.start())
        if mark is None:
            lines.append(text.count("\n", 0, block.start()) + 1)
        elif mark.group(1):
            assert (ROOT / mark.group(1)).exists(), f"{mark.group(1)} (a run-by mark) is missing"
    return lines


def test_each_docs_code_block_is_a_snippet_or_says_what_runs_it_or_why_not():
    unmarked = {str(page.relative_to(ROOT)): unmarked_blocks(page.read_text())
                for page in sorted(DOCS.rglob("*.md"))}
    assert {page: lines for page, lines in unmarked.items() if lines} == {}


def test_the_docs_block_check_reports_a_block_without_a_mark():
    page = ("Text.\n\n```python\nprint(1)\n```\n\n<!-- not run: why -->\n\n```bash\nls\n```\n"
            "\n```python\n--8<-- \"snippets/feeding.py\"\n```\n")
    assert unmarked_blocks(page) == [3]


def test_quickstart_mnist_converts_counts_and_verifies_the_test_set(tmp_path):
    output = run_shell_snippet("quickstart_mnist.sh", tmp_path, 300, MNIST=str(MNIST))
    assert "10000\ttotal" in output
    assert sorted(p.name for p in (tmp_path / "mnist-tfr" / "test").glob("part-*")) == [
        f"part-r-0000{k}.tfrecord" for k in range(4)
    ]
    (head,) = [json.loads(line) for line in output.splitlines() if line.startswith('{"')]
    assert head["label"] == [7] and len(head["image"]) == 784  # the test set's first digit
    schema = 'spark_schema = "height BIGINT, image ARRAY<BIGINT>, label BIGINT, width BIGINT"'
    assert schema in output
    assert "10000 records: every checksum is correct" in output


def test_quickstart_spark_round_trips_records_and_examples_on_hdfs(spark, hdfs):
    names = run_python_snippet("quickstart_spark.py", hdfs.url)
    assert names["spark"] is spark  # the session it asked for is the running one
    assert sorted(names["records"].collect()) == [b"first", b"second", b"third"]
    rows = [r.asDict() for r in names["examples"].orderBy("label").collect()]
    assert rows == [
        {"label": 1, "x": [4.5, 5.5], "day": "b"},
        {"label": 2, "x": [2.5, 3.5], "day": "b"},
        {"label": 7, "x": [0.5, 1.5], "day": "a"},
    ]
    assert [tuple(r) for r in names["counts"].orderBy("day").collect()] == [("a", 1), ("b", 2)]


def test_feeding_feeds_two_dataframes_in_turns_in_equal_shares(spark):
    names = run_python_snippet("feeding.py")
    report = names["report"]
    assert [epoch.records for epoch in report.epochs] == [{0: 800, 1: 800}] * 3
    assert all(epoch.complete and epoch.dropped == 0 for epoch in report.epochs)


def test_quickstart_cluster_trains_keras_on_two_workers_from_hdfs(hdfs):
    from tfrecord_io import fs

    output = run_shell_snippet(
        "quickstart_cluster.sh", ROOT, 900, MNIST=str(MNIST), NN=f"{hdfs.url}/docs"
    )
    accuracy = re.findall(r"\[worker:0\] accuracy (\d\.\d+) ", output)
    assert accuracy and float(accuracy[-1]) >= 0.90, output[-3000:]
    with fs.open(f"{hdfs.url}/docs/models/spark.keras", "rb") as f:
        assert f.read(4) == b"PK\x03\x04"  # a .keras file (a zip archive)


def test_records_python_writes_and_reads_back_plain_and_gzip_files_on_hdfs(hdfs):
    from tfrecord_io import records

    names = run_python_snippet("records_python.py", hdfs.url)
    data = names["data"]
    assert data == f"{hdfs.url}/tmp/records"
    assert names["record"] == b"record 9999"  # the last one read
    assert sum(len(b) for b in records.read_batches(f"{data}/part-0.tfrecord", 4096)) == 10_000
    assert names["frame"]["record"].tolist() == [b"a", b"bc", b"def"]


def test_tf_dataset_trains_keras_on_the_mnist_shards_on_hdfs(hdfs, tmp_path):
    run_shell_snippet(  # the shards the snippet reads, as quickstart_mnist.sh makes them
        "quickstart_mnist.sh", tmp_path, 300, MNIST=str(MNIST)
    )
    from tfrecord_io import fs

    for shard in sorted((tmp_path / "mnist-tfr" / "test").iterdir()):
        with fs.open(f"{hdfs.url}/data/mnist/test/{shard.name}", "wb") as f:
            f.write(shard.read_bytes())
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)  # the model's initial weights
    names = run_python_snippet("tf_dataset.py", hdfs.url)
    accuracy = names["history"].history["accuracy"]
    # It learns: two epochs of a linear model on 10,000 digits reach ~0.8 (chance is 0.1).
    assert len(accuracy) == 2 and accuracy[1] > max(accuracy[0], 0.6)
    first = sum(1 for _ in names["share"])
    assert first == 5000  # half of the 10,000 records, for worker 0 of 2


def test_images_converts_the_mnist_png_folders_and_tensorflow_decodes_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist").symlink_to(MNIST.resolve())
    names = run_python_snippet("images.py")
    result = names["result"]
    assert sum(result.records.values()) == 2000 and result.skipped == []
    assert 150 < result.records["validation"] < 250
    assert names["labels"] == {d: str(d) for d in range(10)}
    assert names["images_batch"].shape == (64, 28, 28, 1)
    assert float(names["images_batch"].numpy().max()) <= 1.0
    assert set(names["labels_batch"].numpy().tolist()) <= set(range(10))


def test_dataframes_write_and_read_examples_both_ways(spark, tmp_path):
    try:
        names = run_python_snippet("dataframes.py", str(tmp_path))
    finally:
        spark.sql("DROP TABLE IF EXISTS ex")  # the table the snippet makes
    assert names["total"] == 4  # two rows written, two inserted
    assert names["typed"].columns == ["label", "image"]
    assert sorted(r.label for r in names["loaded"].collect()) == [1, 2]
    assert dict(names["loaded"].dtypes)["jpeg"] == "binary"  # one value is not UTF-8
    sampled = names["sampled"]
    assert dict(sampled.dtypes) == {
        "label": "bigint", "image": "array<float>", "jpeg": "binary", "day": "string"
    }
    assert sorted(r.day for r in sampled.collect()) == ["mon", "tue"]
    assert [r.frames for r in names["seq"].collect()] == [[[1.0, 2.0], [3.0]]]
    assert names["raw"].columns == ["byte_array"] and names["raw"].count() == 2


def test_fs_urls_writes_lists_expands_and_deletes_on_hdfs(hdfs):
    names = run_python_snippet("fs_urls.py", hdfs.url)
    data = f"{hdfs.url}/tmp/fs/data"
    assert names["size"] == 6
    assert sorted(names["names"]) == [f"{data}/more", f"{data}/part-00.txt"]
    assert names["matches"] == [f"{data}/part-00.txt"]
    assert [len(files) for _, _, files in names["tree"]] == [0, 1, 1]
    assert names["files"] == [f"{data}/more/part-01.txt", f"{data}/part-00.txt"]
    assert names["gone"]


def test_s3_tensorflow_writes_lists_and_reads_through_python_and_tensorflow(s3_env, s3_bucket):
    # The page's bucket is the test server's (its AWS_* settings are in the environment).
    text = (SNIPPETS / "s3_tensorflow.py").read_text().replace("s3://my-bucket",
                                                             f"s3://{s3_bucket}/docs")
    names: dict = {"__name__": "__main__"}
    exec(compile(text, str(SNIPPETS / "s3_tensorflow.py"), "exec"), names)
    data = f"s3://{s3_bucket}/docs/tfrecord-io-demo"
    assert names["listed"] == [f"{data}/part-0.tfrecord", f"{data}/part-1.tfrecord"]
    assert names["files"] == names["listed"]
    assert names["read"] == names["same"] == [b"first", b"second", b"third"]
    from tfrecord_io import fs

    assert not fs.exists(data)


def test_jdbc_images_writes_the_table_as_image_shards_on_hdfs(spark, hdfs, jdbc, images_db):
    names = run_python_snippet("jdbc_images.py", f"{hdfs.url}/docs", jdbc["url"])
    assert names["images"].rdd.getNumPartitions() == 4
    assert (names["bounds"].lo, names["bounds"].hi) == (1, 10_000)
    pixels, labels = next(iter(names["dataset"].unbatch().batch(20_000)))
    assert pixels.shape == (10_000, 28, 28, 1)
    sums = (pixels.numpy() * 255).round().astype(int).sum(axis=(1, 2, 3))
    source_sums = images_db.images.astype(int).sum(axis=(1, 2))
    # Every image once, with its label: the same (label, pixel sum) pairs as the source.
    assert sorted(zip(labels.numpy().tolist(), sums.tolist(), strict=True)) == sorted(
        zip(images_db.labels.tolist(), source_sums.tolist(), strict=True))


def test_jdbc_feed_trains_keras_on_two_workers_from_the_table(spark, jdbc, images_db):
    names = run_python_snippet("jdbc_feed.py", jdbc_url=jdbc["url"])
    assert [epoch.records for epoch in names["report"].epochs] == [{0: 1000, 1: 1000}] * 2
    assert all(epoch.complete and epoch.dropped == 0 for epoch in names["report"].epochs)
    assert names["result"].chief > 0.5  # accuracy after two epochs of 2,000 digits
