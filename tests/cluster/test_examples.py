"""The MNIST examples of ``python/mnist`` end to end: the real MNIST test set converted to the
test HDFS (8,000 training, 2,000 held-out images), trained in one process and on the Spark
cluster, each reaching 90% accuracy on the held-out images and leaving its model on HDFS.

The session's Spark application (``local-cluster[2,2,1024]``) has the four task slots that
``train_ps.py`` (1 ps + 2 workers + a chief) needs. Every example runs in this process through
the function its ``__main__`` block calls, the Spark ones with the session's SparkContext where
their ``__main__`` blocks would start their own: a new interpreter per example would import
TensorFlow again for nothing the tests check.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import re
import sys
import types
from pathlib import Path

import pytest
from pyspark import cloudpickle

from tfrecord_io import cluster, fs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "python" / "mnist"
MNIST = ROOT.parent / "shared" / "data" / "mnist"
ACCURACY = re.compile(r"accuracy (\d\.\d+) ")
EPOCHS = "3"  # enough for > 0.93 with every example; the bar is 0.90


def printed_by(function, *args) -> str:
    """What *function* prints to stdout when called with *args*."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function(*args)
    return out.getvalue()


def accuracy_in(output: str) -> float:
    found = ACCURACY.findall(output)
    assert found, f"no accuracy line in:\n{output[-3000:]}"
    return float(found[-1])


def assert_model_on_hdfs(url: str) -> None:
    """A Keras ``.keras`` file (a zip archive) is at *url*."""
    assert fs.exists(url), f"no model at {url}"
    with fs.open(url, "rb") as f:
        assert f.read(4) == b"PK\x03\x04", f"{url} is not a .keras (zip) file"


@pytest.fixture(scope="module")
def mnist_on_hdfs(hdfs, examples):
    """``prepare.py``'s output on the test HDFS: ``(train_url, eval_url)``."""
    output = f"{hdfs.url}/examples/mnist"
    printed = printed_by(examples.prepare.main, [str(MNIST), output, "--shards", "4"])
    assert f"{output}/train (8000 images)" in printed
    assert f"{output}/eval (2000 images)" in printed
    return f"{output}/train", f"{output}/eval"


@pytest.fixture(scope="module")
def examples():
    """The example scripts as modules, shipped by value to the nodes (as ``spark-submit`` does
    with a script's own functions), since the nodes do not have ``python/mnist`` on their path."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        names = ("prepare", "keras_single", "keras_spark", "train_sync", "train_ps")
        modules = {name: importlib.import_module(name) for name in names}
        for module in modules.values():
            cloudpickle.register_pickle_by_value(module)
        yield types.SimpleNamespace(**modules)
        for module in modules.values():
            cloudpickle.unregister_pickle_by_value(module)
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.fixture
def node_output(caplog):
    """The driver's log records, where the nodes' output arrives (``[worker:0] ...``)."""
    caplog.set_level(logging.INFO, logger="tfrecord_io.cluster")
    return caplog


def test_prepare_splits_the_test_set_8000_for_training_then_2000_held_out(mnist_on_hdfs):
    from tfrecord_io import tf as tfr
    from tfrecord_io.datasets import mnist

    (test_set,) = mnist.load(MNIST)

    def labels(url: str) -> list[int]:
        parsed = tfr.parse_examples(tfr.dataset(url), batch_size=1000)
        return [int(v) for batch in parsed.as_numpy_iterator() for v in batch["label"].reshape(-1)]

    train, held_out = mnist_on_hdfs
    train_labels = labels(train)
    assert train_labels[:10] == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]  # the README's first labels
    assert train_labels == test_set.labels[:8000].tolist()
    assert labels(held_out) == test_set.labels[8000:].tolist()


def test_keras_single_reaches_90_percent_and_writes_its_model_to_hdfs(
    hdfs, mnist_on_hdfs, examples
):
    keras_single = examples.keras_single
    train, held_out = mnist_on_hdfs
    model = f"{hdfs.url}/examples/models/keras_single.keras"
    args = keras_single.parse_args([train, held_out, model, "--epochs", EPOCHS])
    output = printed_by(keras_single.main, args)
    assert accuracy_in(output) >= 0.90
    assert_model_on_hdfs(model)


def test_keras_spark_differs_from_keras_single_in_at_most_10_lines():
    single = (EXAMPLES / "keras_single.py").read_text().splitlines()
    spark = (EXAMPLES / "keras_spark.py").read_text().splitlines()
    import difflib

    changed = [
        line for line in difflib.unified_diff(single, spark, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert len([line for line in changed if line.startswith("+")]) <= 10, changed
    assert len([line for line in changed if line.startswith("-")]) <= 10, changed


# keras_spark.py reaching 90% on two workers and writing its model to HDFS: the README's quickstart
# runs it as users do, with spark-submit (tests/docs/test_snippets.py,
# test_quickstart_cluster_trains_keras_on_two_workers_from_hdfs).


def test_train_sync_reaches_90_percent_on_two_workers_and_writes_its_model_to_hdfs(
    sc, hdfs, mnist_on_hdfs, examples, node_output
):
    train_sync = examples.train_sync
    train, held_out = mnist_on_hdfs
    model = f"{hdfs.url}/examples/models/train_sync.keras"
    args = train_sync.parse_args([train, held_out, model, "--epochs", EPOCHS])
    cluster.run(sc, train_sync.main, args, num_workers=2, mode="sync").wait()
    assert accuracy_in(node_output.text) >= 0.90  # the nodes' output, in the driver's log
    assert_model_on_hdfs(model)


def test_train_ps_reaches_90_percent_with_a_ps_two_workers_and_a_chief(
    sc, hdfs, mnist_on_hdfs, examples, node_output
):
    train_ps = examples.train_ps

    train, held_out = mnist_on_hdfs
    model = f"{hdfs.url}/examples/models/train_ps.keras"
    args = train_ps.parse_args([train, held_out, model, "--epochs", EPOCHS])
    cluster.run(sc, train_ps.main, args, num_workers=2, num_ps=1, mode="ps").wait()
    assert accuracy_in(node_output.text) >= 0.90  # the nodes' output, in the driver's log
    assert_model_on_hdfs(model)
