#!/usr/bin/env python3
"""MNIST -> TFRecord shards with the tfrecord-io library, and a check that reads them back.

    python python/mnist_to_tfrecord.py ../shared/data/mnist /tmp/mnist-tfr --shards 4

What ``tfrecord-io mnist`` does, spelled out with the library API and no TensorFlow: parse
the IDX files, encode each image as a ``tf.train.Example``, write contiguous shards (each with
its split index), then read every record back and compare. INPUT may also be an hdfs:// or
http(s):// location, and OUTPUT an hdfs:// URL.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from tfrecord_io import example, records
from tfrecord_io.datasets import mnist


def write_split(split: mnist.Split, directory: str, shards: int) -> list[str]:
    """Write one set as `shards` files, shard k holding the k-th contiguous range."""
    os.makedirs(directory, exist_ok=True)
    n = len(split)
    paths = []
    for k in range(shards):
        lo, hi = k * n // shards, (k + 1) * n // shards
        path = os.path.join(directory, mnist.shard_name(k))  # part-r-0000k.tfrecord
        examples = (
            example.encode_example({
                "label": int(label),
                "image": image.reshape(-1).astype(np.int64),  # 784 int64 values
                "height": image.shape[0],
                "width": image.shape[1],
            })
            for label, image in zip(split.labels[lo:hi], split.images[lo:hi], strict=True)
        )
        records.write(path, examples)  # local + uncompressed: writes _NAME.tfindex too
        paths.append(path)
    return paths


def check_split(split: mnist.Split, paths: list[str]) -> None:
    """Read every record back, in shard order, and compare with the source."""
    labels, images = [], []
    for path in paths:
        for record in records.read(path):  # checks every CRC
            features = example.decode_example(record, numpy=True)
            labels.append(int(features["label"][0]))
            images.append(features["image"])
    assert labels == split.labels.tolist(), "labels differ"
    assert np.array_equal(np.stack(images), split.images.reshape(len(split), -1)), "pixels differ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="directory (or URL) of the MNIST IDX files")
    parser.add_argument("output", help="output directory")
    parser.add_argument("--shards", type=int, default=2)
    args = parser.parse_args()

    for split in mnist.load(args.input):  # checks magic numbers, sizes and counts
        paths = write_split(split, os.path.join(args.output, split.name), args.shards)
        check_split(split, paths)
        print(f"{split.name}: {len(split)} examples in {len(paths)} shards, read back intact")
    print(
        "TensorFlow reads them with\n"
        f"  tf.data.TFRecordDataset(sorted(tf.io.gfile.glob('{args.output}/test/part-*')))\n"
        "  and tf.io.parse_example(batch, {'label': tf.io.FixedLenFeature([], tf.int64),\n"
        "                                   'image': tf.io.FixedLenFeature([784], tf.int64)})"
    )


if __name__ == "__main__":
    main()
