"""Data sets converted to TFRecord files: MNIST (:mod:`tfrecord_io.datasets.mnist`) and
class-per-folder image trees (:mod:`tfrecord_io.datasets.images`)."""
