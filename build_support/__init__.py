"""Build helpers of tfrecord-io, outside the shipped package: setup.py calls them.

* :mod:`build_support.versions`: the versions, each read from the one place it is stated.
* :mod:`build_support.jar`: compiles ``jvm/src/main/java`` into
  ``tfrecord_io/jars/tfrecord-io.jar``.
* :mod:`build_support.tf_plugin`: compiles TensorFlow's ``hdfs://`` file system plugin.
* :mod:`build_support.minihdfs_maven`: a test-only fallback that resolves the test HDFS
  classpath with Maven when ``make setup`` (sbt) did not write one.
* ``build_support/generate_proto.py``: regenerates ``tfrecord_io/proto/example_pb2.py``.
"""


class BuildError(RuntimeError):
    """A build step cannot be done; the message says what to install or set."""
