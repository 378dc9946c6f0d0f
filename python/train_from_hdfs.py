#!/usr/bin/env python3
"""Train a Keras model from TFRecord shards of tf.train.Examples, on HDFS or local disk.

    python python/train_from_hdfs.py hdfs://namenode:8020/data/mnist-tfr/train --label label
    python python/train_from_hdfs.py /tmp/mnist-tfr/train --epochs 3 --batch-size 256

    # no data at hand? write 6000 synthetic 28x28 "digits" there first:
    python python/train_from_hdfs.py hdfs://127.0.0.1:9000/tmp/demo --demo 6000

TensorFlow cannot open hdfs:// URLs; ``tfrecord_io.tf.dataset`` reads them (and local paths,
globs, directories of part files, webhdfs:// URLs) into a ``tf.data.Dataset``, and
``tfrecord_io.tf.parse_examples`` parses the Examples, here with a feature spec inferred from
the first records. The inputs of the model are every fixed-length numeric feature but the
label (``--features`` to choose), concatenated and normalized; an int64 label makes a
classifier (classes 0..max label seen), a float one a regression.

Data written by ``tfrecord-io mnist`` / ``tfrecord_io.datasets.mnist.convert`` (label, image,
height, width) or by ``tfrecord_io.spark.save_records`` works as is. With ``--num-shards N
--shard-index K``, run N copies (K = 0..N-1) to train N workers on disjoint parts of the data,
as under ``tf.distribute``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def write_demo(url: str, count: int, shards: int = 4) -> None:
    """Synthetic MNIST-like Examples: a blurred stroke per class, 28x28 int64 pixels."""
    import numpy as np

    from tfrecord_io import example, records

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:28, 0:28]
    per_shard = -(-count // shards)
    if "://" not in url:
        os.makedirs(url, exist_ok=True)  # (HDFS creates parent directories itself)
    for k in range(shards):
        def examples(k: int = k) -> Iterator[dict]:
            for i in range(k * per_shard, min(count, (k + 1) * per_shard)):
                label = i % 10
                angle = np.pi * label / 10
                dist = np.abs((xx - 14) * np.sin(angle) - (yy - 14) * np.cos(angle))
                image = np.clip(255 * np.exp(-dist) + rng.normal(0, 30, (28, 28)), 0, 255)
                yield example.encode_example(
                    {"label": label, "image": image.astype(np.int64).ravel(), "height": 28,
                     "width": 28}
                )

        path = f"{url.rstrip('/')}/part-r-{k:05d}.tfrecord"
        # index=True: a split index on HDFS too, as Spark's save_records writes
        records.write(path, examples(), index=True)
    print(f"wrote {count} demo Examples in {shards} shards under {url}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="TFRecord files: path, glob, directory or hdfs:// URL")
    parser.add_argument("--label", default="label", help="the label feature (default: label)")
    parser.add_argument("--features", help="comma-separated input features (default: all "
                        "fixed-length numeric ones but the label)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, help="default: one pass over the data")
    parser.add_argument("--hidden", type=int, default=64, help="units of the hidden layer")
    parser.add_argument("--num-shards", type=int, default=1)
    parser.add_argument("--shard-index", type=int, default=0)
    parser.add_argument("--demo", type=int, metavar="N",
                        help="first write N synthetic MNIST-like Examples to DATA")
    ns = parser.parse_args(argv)

    if ns.demo:
        write_demo(ns.data, ns.demo)

    import keras
    import numpy as np
    import tensorflow as tf

    from tfrecord_io import tf as tfr

    records = tfr.dataset(ns.data, num_shards=ns.num_shards, shard_index=ns.shard_index)
    spec = tfr.infer_features(records)
    print("inferred features:", {k: v for k, v in sorted(spec.items())})
    if ns.label not in spec:
        parser.error(f"no feature {ns.label!r} in the data; features: {sorted(spec)}")
    label_spec = spec[ns.label]
    if not isinstance(label_spec, tf.io.FixedLenFeature) or label_spec.shape:
        parser.error(f"the label {ns.label!r} must be a scalar feature, not {label_spec}")
    if ns.features:
        names = [n.strip() for n in ns.features.split(",") if n.strip()]
        missing = [n for n in names if n not in spec]
        if missing:
            parser.error(f"no feature(s) {missing} in the data; features: {sorted(spec)}")
    else:
        names = [
            n for n, s in sorted(spec.items())
            if n != ns.label and isinstance(s, tf.io.FixedLenFeature) and s.dtype != tf.string
        ]
    if not names:
        parser.error("no fixed-length numeric input features: name some with --features")
    print(f"inputs: {names}; label: {ns.label}")

    widths = {n: int(np.prod(spec[n].shape, dtype=np.int64)) for n in names}

    def to_xy(features: dict) -> tuple:
        columns = [tf.reshape(tf.cast(features[n], tf.float32), [-1, widths[n]]) for n in names]
        return tf.concat(columns, axis=1), features[ns.label]

    batches = tfr.parse_examples(records, {**{n: spec[n] for n in names}, ns.label: label_spec},
                                 batch_size=ns.batch_size).map(to_xy)
    classify = label_spec.dtype == tf.int64
    normalize = keras.layers.Normalization()
    normalize.adapt(batches.take(20).map(lambda x, y: x))
    if classify:
        sample = [int(v) for _, y in batches.take(20) for v in y.numpy()]
        classes = max(sample) + 1
        head = keras.layers.Dense(classes)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = ["accuracy"]
        print(f"classifier: {classes} classes")
    else:
        head = keras.layers.Dense(1)
        loss, metrics = "mse", ["mae"]
        print("regression")
    model = keras.Sequential([
        keras.Input(shape=(sum(widths.values()),)),
        normalize,
        keras.layers.Dense(ns.hidden, activation="relu"),
        head,
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, metrics=metrics)
    train = batches.repeat() if ns.steps_per_epoch else batches
    t0 = time.perf_counter()
    history = model.fit(train.prefetch(tf.data.AUTOTUNE), epochs=ns.epochs, shuffle=False,
                        steps_per_epoch=ns.steps_per_epoch, verbose=2)
    print(f"trained in {time.perf_counter() - t0:.1f} s; final "
          + ", ".join(f"{k}={v[-1]:.4f}" for k, v in history.history.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
