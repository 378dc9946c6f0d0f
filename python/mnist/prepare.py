#!/usr/bin/env python3
"""Convert the MNIST test set to TFRecord shards for the examples in this directory.

    python python/mnist/prepare.py ../shared/data/mnist hdfs://127.0.0.1:9000/mnist
    python python/mnist/prepare.py ../shared/data/mnist /tmp/mnist --shards 4 --overwrite

Only the 10,000 images of MNIST's test set (``t10k-*``) are at hand, so they are split in two:
the first 8,000 go to ``OUTPUT/train`` (for training), the last 2,000 to ``OUTPUT/eval`` (held
out, to measure accuracy on). Each directory holds ``--shards`` ``part-r-NNNNN.tfrecord`` files of
``tf.train.Example`` records with ``label`` (int64), ``image`` (the 784 pixels as raw bytes,
``tf.io.decode_raw(image, tf.uint8)``), ``height`` and ``width``, plus their split indexes and
``_SUCCESS``, as :func:`tfrecord_io.datasets.mnist.convert` writes them. OUTPUT may be a local
directory or an ``hdfs://`` URL.
"""

from __future__ import annotations

import argparse
import logging
import sys

from tfrecord_io.datasets import mnist

log = logging.getLogger("mnist.prepare")

#: Images of the test set used for training; the rest are held out for evaluation.
TRAIN_IMAGES = 8000


def split(source: str, train_images: int = TRAIN_IMAGES) -> list[mnist.Split]:
    """The MNIST test set at *source*, cut into a ``train`` and an ``eval`` set.

    Raises:
        tfrecord_io.datasets.mnist.MnistError: no test set at *source*, or a damaged file.
        ValueError: *train_images* leaves no image for one of the two sets.
    """
    test = next((s for s in mnist.load(source) if s.name == "test"), None)
    if test is None:
        raise mnist.MnistError(f"{source}: no MNIST test set (t10k-images-idx3-ubyte[.gz])")
    if not 0 < train_images < len(test):
        raise ValueError(f"--train-images must be in [1, {len(test) - 1}], not {train_images}")
    return [
        mnist.Split("train", test.images[:train_images], test.labels[:train_images],
                    test.images_source, test.labels_source),
        mnist.Split("eval", test.images[train_images:], test.labels[train_images:],
                    test.images_source, test.labels_source),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="directory of the MNIST IDX files (a path or URL)")
    parser.add_argument("output", help="where OUTPUT/train and OUTPUT/eval go (a path or URL)")
    parser.add_argument("--shards", type=int, default=4, help="files per set (default 4)")
    parser.add_argument("--train-images", type=int, default=TRAIN_IMAGES,
                        help=f"images for training, from the start (default {TRAIN_IMAGES})")
    parser.add_argument("--overwrite", action="store_true", help="replace existing sets")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    sets = split(args.source, args.train_images)
    result = mnist.convert(sets, args.output, shards=args.shards, image_format="bytes",
                           overwrite=args.overwrite)
    log.info("%s", result.summary())
    print(f"train: {result.output.rstrip('/')}/train ({result.records['train']} images), "
          f"eval: {result.output.rstrip('/')}/eval ({result.records['eval']} images)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
