"""``python/mnist/train_spark_feed.py`` end to end: the real MNIST test set as a DataFrame,
8,000 training rows and 2,000 validation rows (a second feed) fed to 2 TensorFlow workers by
``ml.TFEstimator``; the workers' validation accuracy and that of ``TFModel.transform`` on the
same 2,000 rows are both >= 0.90 and agree.

It runs in this process with the session's SparkContext (``local-cluster[2,2,1024]``: 2 slots
for the workers, 2 for the feeding tasks), as its ``__main__`` block does with its own.
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle

from tfrecord_io import ml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "python" / "mnist"
MNIST = ROOT.parent / "shared" / "data" / "mnist"
WORKERS_ACCURACY = re.compile(r"accuracy (\d\.\d+) \(loss [0-9.]+\) on the validation feed")
EPOCHS = "3"


@pytest.fixture(scope="module")
def train_spark_feed():
    """The example as a module, shipped by value to the nodes (as spark-submit does with a
    script's own functions)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        module = importlib.import_module("train_spark_feed")
        cloudpickle.register_pickle_by_value(module)
        yield module
        cloudpickle.unregister_pickle_by_value(module)
    finally:
        sys.path.remove(str(EXAMPLES))


def test_train_spark_feed_reaches_90_percent_on_the_workers_and_with_tfmodel_transform(
    spark, tmp_path, train_spark_feed, caplog, capsys
):
    caplog.set_level(logging.INFO, logger="tfrecord_io.cluster")  # the nodes' output
    args = train_spark_feed.parse_args([str(MNIST), str(tmp_path / "models"), "--epochs", EPOCHS])
    model, accuracy = train_spark_feed.run(spark, args)

    assert isinstance(model, ml.TFModel)
    assert Path(model.getModelDir(), "saved_model.pb").is_file()
    assert "on 2000 validation rows with TFModel.transform" in capsys.readouterr().out
    found = WORKERS_ACCURACY.findall(caplog.text)
    assert len(found) == 2, caplog.text[-3000:]  # each worker reports the accuracy of both
    on_workers = float(found[0])
    assert on_workers >= 0.90
    assert accuracy >= 0.90
    assert accuracy == pytest.approx(on_workers, abs=0.0015)  # the same model, the same rows
