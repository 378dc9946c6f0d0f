"""How a lost executor is put into words, from what Spark's scheduler recorded (the jar's
ExecutorLosses listener; its JUnit test feeds it Spark's events)."""

from __future__ import annotations

from tfrecord_io.cluster.losses import describe

MEMORY_KILL = ("Container killed by YARN for exceeding physical memory limits. 2.4 GB of 2 GB "
               "physical memory used. Consider boosting spark.executor.memoryOverhead.")


def test_a_memory_kill_quotes_yarn_and_names_the_settings_to_raise():
    text = describe({"executor": "2", "host": "nm-1", "container": "container_1_0001_01_000003",
                     "reason": MEMORY_KILL}, 8.0)
    assert text.startswith("Spark lost executor 2 on nm-1 (YARN container "
                           "container_1_0001_01_000003): " + MEMORY_KILL)
    assert "(YARN exit status -104)" in text
    assert "raise spark.executor.memoryOverhead (or spark.executor.pyspark.memory)" in text


def test_another_reason_is_quoted_as_spark_gave_it():
    text = describe({"executor": "1", "host": "198.18.0.12", "reason": "worker lost"}, 8.0)
    assert text == "Spark lost executor 1 on 198.18.0.12: worker lost"


def test_an_executor_spark_did_not_remove_is_named_without_a_cause():
    text = describe({"executor": "3", "host": "h"}, 8.0)
    assert text == ("Spark gave no reason for losing executor 3 on h within 8 s (it still "
                    "counted the executor alive)")
