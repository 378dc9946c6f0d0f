"""tfrecord-io: TFRecord as a first-class Hadoop/Spark format, readable by TensorFlow from HDFS."""

__version__ = "0.1.0"
