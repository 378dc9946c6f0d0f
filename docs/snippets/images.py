import tensorflow as tf

from tfrecord_io import tf as tfr
from tfrecord_io.datasets import images

# Something to try it on: MNIST's test set as PNG files, one folder per digit
# (mnist-png/7/00000.png, ...), made from its IDX files in data/mnist.
images.write_png_folders("data/mnist", "mnist-png", limit=2000)

result = images.convert(
    "mnist-png",              # SRC/CLASS/IMAGE, local or a URL (hdfs://, s3://, ...)
    "mnist-png-tfr",          # -> train/, validation/, labels.txt
    shards=4,
    validation_fraction=0.1,  # by a hash of each file's path: the same split on every run
    on_corrupt="skip",        # leave damaged files out, listed in result.skipped
)
print(result.summary())
labels = images.read_label_file("mnist-png-tfr")  # {0: "0", 1: "1", ..., 9: "9"}

spec = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
}


def decode(record):
    example = tf.io.parse_single_example(record, spec)
    image = tf.io.decode_png(example["image/encoded"], channels=1)  # the PNG as stored
    return tf.image.convert_image_dtype(image, tf.float32), example["image/class/label"]


train = tfr.dataset("mnist-png-tfr/train").map(decode).batch(64)
images_batch, labels_batch = next(iter(train))  # (64, 28, 28, 1) floats in [0, 1], (64,) labels
