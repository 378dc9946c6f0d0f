"""tfrecord-io: TFRecord as a first-class Hadoop/Spark format, readable by TensorFlow from HDFS and
object stores.

The layers and where each concern lives: ``docs/architecture.md``.
"""

# The one place the package's version is stated: pyproject.toml, build.sbt and the jar's
# manifest read it from here.
__version__ = "0.1.0"
