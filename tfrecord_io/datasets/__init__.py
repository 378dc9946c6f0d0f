"""Public data sets converted to TFRecord files: :mod:`tfrecord_io.datasets.mnist`."""
