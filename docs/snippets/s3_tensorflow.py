import tensorflow as tf

from tfrecord_io import fs, records
from tfrecord_io import tf as tfr

# The bucket must exist (tfrecord-io never creates or deletes buckets); the endpoint, keys and
# region come from the standard AWS settings (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...).
data = "s3://my-bucket/tfrecord-io-demo"

records.write(f"{data}/part-0.tfrecord", [b"first", b"second"])  # appears when closed, whole
records.write(f"{data}/part-1.tfrecord", [b"third"])
listed = fs.ls(data)  # the keys below the prefix, as URLs
files = fs.expand(data)  # the data files, as every reader lists them

tfr.register_filesystems()  # s3:// inside TensorFlow itself, through tfrecord_io.fs
dataset = tf.data.TFRecordDataset(tf.io.gfile.glob(f"{data}/part-*"))
read = [bytes(r) for r in dataset.as_numpy_iterator()]  # [b'first', b'second', b'third']
same = [bytes(r) for r in tfr.dataset(data).as_numpy_iterator()]  # sharding, ranges, ...
with tf.io.gfile.GFile(f"{data}/_notes.txt", "w") as f:  # uploaded when the file is closed
    f.write("written by TensorFlow")
fs.delete(data, recursive=True)
