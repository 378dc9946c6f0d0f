"""The Spark application a cluster runs in, as the launcher sees it.

:func:`application_of` wraps what the caller gave :func:`~tfrecord_io.cluster.run`:

* :class:`ClassicApplication`: a ``SparkContext`` in this process (a classic ``SparkSession``
  gives its ``sparkContext``). The barrier job is ``sc.parallelize(range(n), n).barrier()
  .mapPartitions(task)`` under a job group, cancelled with ``cancelJobGroup``; free task slots
  and why executors were lost are asked of the driver's JVM through py4j.
* :class:`ConnectApplication`: a Spark Connect client session (no ``SparkContext``, no py4j;
  the driver runs in the Connect server). The barrier job is a barrier stage of the DataFrame
  API: ``spark.range(n, numPartitions=n).mapInArrow(..., barrier=True)`` (Spark >= 3.5),
  tagged with ``spark.addTag`` from the submitting thread (the Connect client's tags are
  per thread) and cancelled with ``spark.interruptTag``. Free task slots and why executors
  were lost are asked of the server's driver through the jar's driver-status source
  (:data:`~tfrecord_io.spark.jvm.DRIVER_STATUS_SOURCE`, answered on the driver without a
  Spark job).

Either way the nodes' Spark tasks connect back to the control channel of this process, at
:meth:`SparkApplication.control_host` (``TFRECORD_IO_CONTROL_HOST`` or ``run(control_host=)``
when set), which the executors must reach.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

from tfrecord_io.cluster.losses import ExecutorLosses
from tfrecord_io.errors import SparkConnectError
from tfrecord_io.spark.jvm import (
    DRIVER_STATUS_SOURCE,
    executor_loss,
    executor_losses,
    is_connect,
    is_stopped,
    jobs_with_tag,
    max_concurrent_tasks,
    replace_executor,
)

__all__ = [
    "SparkApplication",
    "ClassicApplication",
    "ConnectApplication",
    "application_of",
    "JobTags",
    "CONTROL_HOST_ENV",
]

log = logging.getLogger("tfrecord_io.cluster")

#: The environment variable naming the address of this machine that the executors reach the
#: control channel at (``run(control_host=...)`` wins over it).
CONTROL_HOST_ENV = "TFRECORD_IO_CONTROL_HOST"

Task = Callable[[Iterator[Any]], Iterator[str]]


class SparkApplication:
    """What the launcher needs of a Spark application (see the module docs)."""

    #: ``"classic"`` or ``"connect"``.
    kind: str = ""

    @property
    def master(self) -> str:
        """The application's master URL (``spark.master``)."""
        return self.conf("spark.master", "") or ""

    def conf(self, key: str, default: str | None = None) -> str | None:
        """The application's setting *key*, or *default*."""
        raise NotImplementedError

    def submit(self, tag: str, description: str, task: Task, n: int) -> list[str]:
        """Run *task* as a barrier stage of *n* tasks (task *i* in partition *i*), blocking
        until the job ends; return what the tasks yielded. The job carries *tag* (a job group
        or a job tag): :meth:`cancel` ends it."""
        raise NotImplementedError

    def cancel(self, tag: str) -> None:
        """Cancel the jobs submitted with *tag* (from any thread)."""
        raise NotImplementedError

    def free_slots(self) -> int | None:
        """Task slots of the executors registered now (what Spark's barrier check counts), or
        None where that cannot be asked."""
        raise NotImplementedError

    def executor_losses(self) -> ExecutorLosses | None:
        """The record of why Spark loses executors, from now on; None where the driver's JVM
        is out of reach (lost nodes are then named without Spark's reason)."""
        raise NotImplementedError

    def replace_executor(self, executor: str) -> bool:
        """Have Spark kill *executor* and ask its cluster manager for another in its place,
        as Spark does itself with an executor whose heartbeats stopped (its slots stop counting
        at once, not after ``spark.network.timeout``); whether Spark took the request."""
        raise NotImplementedError

    def spark_context(self) -> Any:
        """The ``SparkContext`` (a classic application's feeding jobs are submitted with it).

        Raises:
            SparkConnectError: a Spark Connect session has none.
        """
        raise NotImplementedError

    def default_control_host(self) -> str:
        """The address the executors reach this process at, when not given."""
        raise NotImplementedError

    def control_host(self, override: str | None = None) -> str:
        """The address the control channel listens on, which every executor must reach:
        *override*, else ``TFRECORD_IO_CONTROL_HOST``, else :meth:`default_control_host`."""
        return override or os.environ.get(CONTROL_HOST_ENV) or self.default_control_host()


class JobTags:
    """The job tags of *session*'s jobs, whatever its kind: Spark Connect's session tags
    (``addTag``, ``removeTag``, ``interruptTag``), or in a classic session the SparkContext's
    job tags (``addJobTag``, ``removeJobTag``, ``cancelJobsWithTag``; a classic session has no
    session tags before Spark 4). Either way a tag marks the jobs that the adding thread starts
    next, until it is removed."""

    def __init__(self, session: Any) -> None:
        self._sc = None
        if is_connect(session):
            self.add, self.remove = session.addTag, session.removeTag
            self.interrupt = session.interruptTag
        else:
            self._sc = session.sparkContext
            self.add, self.remove = self._sc.addJobTag, self._sc.removeJobTag
            self.interrupt = self._sc.cancelJobsWithTag

    def describe(self, group: str, description: str) -> None:
        """Name the jobs this thread starts next in Spark's UI: a classic session's job group
        and description (Spark Connect names them by its operations)."""
        if self._sc is not None:
            self._sc.setJobGroup(group, description, True)

    def submitted(self, tag: str) -> bool | None:
        """Whether a job carrying *tag* has reached Spark's scheduler (a classic session's
        status tracker tells), or None where that cannot be told (Spark Connect)."""
        if self._sc is None:
            return None
        return bool(jobs_with_tag(self._sc, tag))


class ClassicApplication(SparkApplication):
    """A classic application: its ``SparkContext`` is in this process."""

    kind = "classic"

    def __init__(self, sc: Any) -> None:
        self._sc = sc

    @property
    def master(self) -> str:
        return str(self._sc.master)

    def conf(self, key: str, default: str | None = None) -> str | None:
        return self._sc.getConf().get(key, default)

    def submit(self, tag: str, description: str, task: Task, n: int) -> list[str]:
        self._sc.setJobGroup(tag, description, True)
        return list(self._sc.parallelize(range(n), n).barrier().mapPartitions(task).collect())

    def cancel(self, tag: str) -> None:
        self._sc.cancelJobGroup(tag)

    def free_slots(self) -> int | None:
        return max_concurrent_tasks(self._sc)

    def executor_losses(self) -> ExecutorLosses | None:
        try:
            listener = executor_losses(self._sc)
        except Exception:
            log.warning("cannot record why Spark loses executors: lost nodes go without a cause",
                        exc_info=True)
            return None
        return ExecutorLosses(lambda task, timeout: executor_loss(listener, task, timeout))

    def replace_executor(self, executor: str) -> bool:
        return replace_executor(self._sc, executor)

    def spark_context(self) -> Any:
        return self._sc

    def default_control_host(self) -> str:
        return self.conf("spark.driver.host", "127.0.0.1") or "127.0.0.1"


class ConnectApplication(SparkApplication):
    """A Spark Connect client session's application (its driver runs in the Connect server)."""

    kind = "connect"

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def conf(self, key: str, default: str | None = None) -> str | None:
        return self._spark.conf.get(key, default)

    def submit(self, tag: str, description: str, task: Task, n: int) -> list[str]:
        def partition(batches: Iterator[Any]) -> Iterator[Any]:
            import pyarrow as pa  # noqa: PLC0415 - on the executor

            rows = sum(batch.num_rows for batch in batches)
            if rows != 1:  # range(n, numPartitions=n) puts one row in each partition
                raise RuntimeError(f"a cluster task got {rows} rows instead of 1")
            for line in task(iter(())):
                yield pa.RecordBatch.from_pydict({"out": [line]})

        # The client's tags are per thread: this thread's jobs carry it, cancel() finds them.
        self._spark.addTag(tag)
        try:
            frame = self._spark.range(n, numPartitions=n).mapInArrow(
                partition, "out string", barrier=True)
            return [row.out for row in frame.collect()]
        finally:
            self._spark.removeTag(tag)

    def cancel(self, tag: str) -> None:
        self._spark.interruptTag(tag)

    def _status(self, action: str, **options: Any) -> list[Any]:
        """The rows of the jar's driver-status source for *action* (answered on the driver,
        without a Spark job)."""
        return list(self._spark.read.format(DRIVER_STATUS_SOURCE)
                    .options(action=action, **options).load().collect())

    def free_slots(self) -> int | None:
        try:
            return int(self._status("slots")[0].slots)
        except Exception:
            log.warning("cannot ask the Connect server's driver for its task slots (has it "
                        "tfrecord-io's jar?): the check reads the configuration only",
                        exc_info=True)
            return None

    def executor_losses(self) -> ExecutorLosses | None:
        try:
            self._status("watch")
        except Exception:
            log.warning("cannot record why Spark loses executors (has the Connect server "
                        "tfrecord-io's jar?): lost nodes go without a cause", exc_info=True)
            return None

        def lookup(task: int, timeout: float) -> dict[str, str] | None:
            rows = self._status("loss", task=int(task), timeoutMs=max(0, int(timeout * 1000)))
            if not rows:
                return None
            return {k: str(v) for k, v in rows[0].asDict().items() if v is not None}

        return ExecutorLosses(lookup)

    def replace_executor(self, executor: str) -> bool:
        return bool(self._status("replace", executor=executor)[0].replaced)

    def spark_context(self) -> Any:
        raise SparkConnectError(
            "a Spark Connect session has no SparkContext: use the DataFrame API (the cluster "
            "feeds Connect DataFrames through it)")

    def default_control_host(self) -> str:
        """This machine's address on its route to the Connect server's driver (the executors'
        network, as seen from here); 127.0.0.1 when that driver is on loopback."""
        driver = self.conf("spark.driver.host", None) or "127.0.0.1"
        return _local_address_towards(driver)


def _local_address_towards(host: str) -> str:
    try:
        if ipaddress.ip_address(host).is_loopback:
            return "127.0.0.1" if ":" not in host else host
    except ValueError:
        if host == "localhost":
            return "127.0.0.1"
    try:
        family, _, _, _, address = socket.getaddrinfo(host, 1, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect(address)  # UDP: no packet is sent, only the route is chosen
            return str(probe.getsockname()[0])
    except OSError:
        log.warning("cannot tell this machine's address towards %s; the control channel "
                    "listens on this host's name (set %s to override)", host, CONTROL_HOST_ENV)
        return socket.gethostname()


def application_of(spark: Any) -> SparkApplication:
    """The application of *spark*: a ``SparkContext``, a classic ``SparkSession`` or a Spark
    Connect ``SparkSession``.

    Raises:
        ValueError: *spark* is none of them, or a stopped SparkContext.
    """
    if isinstance(spark, SparkApplication):
        return spark
    if is_connect(spark):
        return ConnectApplication(spark)
    if hasattr(spark, "sparkContext"):
        spark = spark.sparkContext
    if hasattr(spark, "parallelize") and hasattr(spark, "getConf"):
        if is_stopped(spark):
            raise ValueError("cluster.run needs a running SparkContext, but this one was "
                             "stopped: start a new one (SparkSession.builder.getOrCreate())")
        return ClassicApplication(spark)
    raise ValueError(
        f"cluster.run needs a SparkContext or a SparkSession (classic or Spark Connect), "
        f"not {type(spark).__name__}"
    )
