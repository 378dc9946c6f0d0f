"""tfrecord_io.spark.jvm.describe_failure: a Spark failure in one line for a person. The
exceptions here are stand-ins for py4j's and pyspark's, with the attributes theirs have
(``java_exception``, ``_origin``) and Java throwables that answer ``toString`` and
``getCause``; tests/cli/test_cli_spark_failures.py describes real ones from a real Spark."""

from __future__ import annotations

import pytest

from tfrecord_io.spark.jvm import describe_failure


class Throwable:
    """A Java throwable as py4j shows it."""

    def __init__(self, text: str, cause: Throwable | None = None) -> None:
        self.text, self.cause = text, cause

    def toString(self) -> str:  # noqa: N802 - Java's name
        return self.text

    def getCause(self) -> Throwable | None:  # noqa: N802 - Java's name
        return self.cause


class Gone:
    """A Java throwable whose JVM has exited."""

    def toString(self) -> str:  # noqa: N802 - Java's name
        raise ConnectionError("the Java gateway is gone")


class Py4JJavaError(Exception):
    __module__ = "py4j.protocol"

    def __init__(self, text: str, java_exception: object) -> None:
        super().__init__(text)
        self.java_exception = java_exception


class CapturedException(Exception):  # noqa: N818 - pyspark's name
    __module__ = "pyspark.errors.exceptions.captured"

    def __init__(self, text: str, origin: object) -> None:
        super().__init__(text)
        self._origin = origin


def test_an_exception_of_anything_but_spark_has_no_description():
    assert describe_failure(ValueError("x")) is None
    assert describe_failure(OSError(2, "missing")) is None


def test_a_java_exception_is_its_first_line():
    java = Throwable("java.io.IOException: disk full\n\tat a.B.c(B.java:1)")
    assert describe_failure(Py4JJavaError("o1.save", java)) == "java.io.IOException: disk full"


def test_a_java_exception_names_its_root_cause():
    root = Throwable("java.net.ConnectException: Connection refused")
    java = Throwable("org.apache.spark.SparkException: Job aborted.",
                     Throwable("java.io.IOException: write failed", root))
    assert describe_failure(CapturedException("aborted", java)) == (
        "org.apache.spark.SparkException: Job aborted. "
        "(caused by java.net.ConnectException: Connection refused)"
    )


def test_a_cause_cycle_is_followed_only_so_far():
    java = Throwable("java.lang.RuntimeException: loop")
    java.cause = java
    assert describe_failure(Py4JJavaError("x", java)) == "java.lang.RuntimeException: loop"


def test_a_task_that_failed_in_python_adds_the_python_error():
    task = ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "job.py", line 3, in f\n'
            "ZeroDivisionError: division by zero\n\tat org.apache.spark.X(X.scala:1)")
    java = Throwable("org.apache.spark.SparkException: Job aborted due to stage failure",
                     Throwable(task))
    assert describe_failure(Py4JJavaError("x", java)) == (
        "org.apache.spark.SparkException: Job aborted due to stage failure "
        "(caused by org.apache.spark.api.python.PythonException): "
        "ZeroDivisionError: division by zero"
    )


def test_a_failure_whose_jvm_is_gone_is_described_from_its_text():
    error = Py4JJavaError("An error occurred while calling o1.save.\n: java.io.IOException: "
                          "stream closed", Gone())
    assert describe_failure(error) == "java.io.IOException: stream closed"


@pytest.mark.parametrize("text, expected", [
    ("Answer from Java side is empty", "Py4JNetworkError: Answer from Java side is empty"),
    ("", "Py4JNetworkError"),
])
def test_a_py4j_error_without_a_java_exception_is_its_class_and_message(text, expected):
    error = type("Py4JNetworkError", (Exception,), {"__module__": "py4j.protocol"})(text)
    assert describe_failure(error) == expected
