"""What the launcher asks of a Spark application, on a classic session and over Spark Connect
(``any_spark``): an executor handed back to Spark (a silent node's) stops counting at once, and
the cluster manager starts another in its place."""

from __future__ import annotations

from tfrecord_io.cluster.application import application_of

from processes import free_slots_again
from waiting import eventually


def _task_id(spark) -> int:
    """The id of a Spark task that ran just now (on one of the executors)."""

    def attempt(frames):
        import pandas as pd
        from pyspark import TaskContext

        for _ in frames:
            yield pd.DataFrame({"task": [TaskContext.get().taskAttemptId()]})

    return int(spark.range(1, numPartitions=1).mapInPandas(attempt, "task long").first().task)


def test_a_replaced_executor_stops_counting_at_once_and_another_takes_its_slots(any_spark):
    application = application_of(any_spark)
    slots = application.free_slots()
    losses = application.executor_losses()
    task = _task_id(any_spark)
    # Spark's listener bus tells the listener a bit later
    executor = eventually(lambda: losses.executor_of(task), timeout=30,
                          what=f"the executor of task {task}")
    assert application.replace_executor(executor)
    # local-cluster[2,2,...]: the executor's 2 slots go with it, before Spark hears it exit
    assert application.free_slots() == slots - 2
    free_slots_again(application, slots)  # the master starts another executor in its place
