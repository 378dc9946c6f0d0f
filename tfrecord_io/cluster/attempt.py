"""One attempt of a cluster: a Spark barrier job of one task per node, watched from the driver.

:class:`Attempt` submits the job from a thread of its own under a tag of its own (a job group, or
a Spark Connect job tag: :mod:`tfrecord_io.cluster.application`), keeps what the nodes report
over the control channel (registration, output, heartbeats, outcome), decides
when the attempt is over -- every node running ``main_fun`` finished, or the first failure --
and then tears it down: "stop" to every node, wait for each to report that its processes are
gone, cancel the job if Spark still runs it, join the job.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from tfrecord_io.cluster import slots
from tfrecord_io.cluster.application import CONTROL_HOST_ENV, SparkApplication
from tfrecord_io.cluster.channel import ControlServer
from tfrecord_io.cluster.description import AttemptDescription
from tfrecord_io.cluster.losses import LOSS_WAIT, ExecutorLosses
from tfrecord_io.cluster.messages import (
    Done,
    FailureKind,
    Grow,
    Hello,
    Log,
    Message,
    Report,
    Stop,
    TensorBoard,
)
from tfrecord_io.cluster.roles import Role
from tfrecord_io.cluster.task import make_task
from tfrecord_io.errors import ClusterError
from tfrecord_io.spark.jvm import describe_failure

__all__ = ["Attempt", "HEARTBEAT_TIMEOUT", "STOP_TIMEOUT"]

log = logging.getLogger("tfrecord_io.cluster")

#: The default of ``cluster.run(heartbeat_timeout=...)``: a node's Spark task silent for this
#: long (no heartbeat; the task sends one every 2 s) is lost, its host unreachable or its
#: process frozen.
HEARTBEAT_TIMEOUT = 30.0
#: How long nodes get to report that they stopped before the Spark job is cancelled.
STOP_TIMEOUT = 15.0
#: After the first failure, reports arriving this soon are weighed too (a killed worker's
#: peers fail right after it; the killed one is the cause).
_CAUSE_WINDOW = 1.0
#: A running node silent this long (3 of its task's heartbeats) after another failed is
#: waited for, up to the heartbeat timeout: it may be the cause.
_QUIET = 6.5
_JOIN_TIMEOUT = 120.0


def _failure(node: str, error: str | None, traceback: str | None = None) -> ClusterError:
    text = f"{node} failed: {error or 'unknown error'}"
    if traceback:
        text += f"\n--- traceback on {node} ---\n{traceback.rstrip()}"
    return ClusterError(text, node=node)


#: How a node is lost with its executor, container or host (rather than failing by itself).
_LOSSES = (FailureKind.LOST, FailureKind.SILENT)
#: How Spark says a job was cancelled: ``[SPARK_JOB_CANCELLED] Job 1 cancelled as part of
#: cancellation of all jobs`` (or "part of cancelled job group", "because SparkContext was shut
#: down"; Spark 3 without the error class), a Spark Connect operation interrupted.
_CANCELLED = re.compile(r"SPARK_JOB_CANCELLED|\bJob \d+ cancelled\b|OPERATION_CANCELED")


def _cancellation(error: BaseException | None) -> ClusterError | None:
    """The error of a cluster whose Spark job *error* says was cancelled, or None (*error* is
    another failure). Only called before the attempt cancels its job itself: someone else
    cancelled it (pyspark's Ctrl-C handler, ``sc.cancelAllJobs()``, the job group)."""
    if error is None:
        return None
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - its JVM may be gone
        text = ""
    if not _CANCELLED.search(text):
        return None
    # One line of Spark's: a Py4J error's first line only names the call, the Java one says why
    line = describe_failure(error) or next(
        (ln[2:] for ln in text.splitlines() if ln.startswith(": ")), text.splitlines()[0])
    return ClusterError(
        f"the cluster's Spark job was cancelled, not by the cluster (Ctrl-C, "
        f"sc.cancelAllJobs() or its job group cancelled): every node was stopped and the "
        f"cluster was not restarted; run it again to start over ({line.strip()})")


class Attempt:
    """One try at running the cluster (see the module docs)."""

    def __init__(
        self,
        application: SparkApplication,
        roles: list[Role],
        description: AttemptDescription,
        payload: bytes,
        group: str,
        server: ControlServer,
        on_report: Callable[[str, Report], None] = lambda node, report: None,
        losses: ExecutorLosses | None = None,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
    ) -> None:
        self.number: int = description.number
        self._application = application
        self.roles: list[Role] = roles  #: the attempt's nodes, in task order
        self._description = description
        self._payload = payload
        self._group = group
        self._server = server
        self._refused_before = server.refused  # connections the server refused before this
        self._on_report = on_report
        self._losses = losses
        self._heartbeat_timeout = heartbeat_timeout
        self._names = {r.name for r in roles}
        self._main = {r.name for r in roles if r.runs_main}
        self._cond = threading.Condition()
        self._registered: dict[str, Hello] = {}
        self._last_seen: dict[str, float] = {}
        self._done: dict[str, Done] = {}
        self._values: dict[str, bytes] = {}
        self._resized: set[str] = set()  # left main_fun for the gang to grow
        self.growing_to: int | None = None  #: the workers ``grow`` told the nodes of
        self._lost: set[str] = set()
        self._silenced: set[str] = set()  # lost for want of heartbeats
        self._silent_executors: list[str] = []  # theirs, to hand back to Spark
        self._failures: list[tuple[int, float, ClusterError]] = []
        self._kinds: dict[int, FailureKind] = {}  # by id of a failure's error
        # failures that are a lost link (their cause is asked of Spark), by id of the error
        self._link_failures: dict[int, str] = {}
        self._stopping = False
        # finish() decided the attempt is over (its cause is known): nodes ending from then on
        # end with its teardown (stopped, or their tasks cancelled), none is a cause
        self._over = False
        #: the job cancelled by someone else (Ctrl-C): the cluster stops, no restart
        self._cancelled: ClusterError | None = None
        self._cancelling = False  # the attempt cancels its job itself (teardown)
        self.stopped_early = False
        self.tensorboard_url: str | None = None
        self._spark_error: BaseException | None = None
        self._spark_done = False
        self._outcomes: list[dict[str, Any]] = []  # what the tasks returned, once the job ended
        self._thread = threading.Thread(target=self._run_job, name=group, daemon=True)

    # -- the Spark job -------------------------------------------------------------------------

    def start(self) -> None:
        """Submit the barrier job (from a thread of its own)."""
        self._thread.start()

    def _run_job(self) -> None:
        n = len(self.roles)
        try:
            task = make_task(self._description, self.roles, self._payload)
            lines = self._application.submit(
                self._group, f"tfrecord-io cluster, attempt {self.number}", task, n)
            self._outcomes = [json.loads(line) for line in lines]
        except BaseException as e:  # noqa: BLE001 - handed to the watcher
            self._spark_error = e
        finally:
            # Cancelled while the attempt neither stopped nor cancelled it: by someone else
            # (a stop, not a failure to restart after).
            cancelled = None if self._cancelling else _cancellation(self._spark_error)
            with self._cond:
                if cancelled is not None and not self._stopping:
                    self._cancelled = cancelled
                    log.error("%s", cancelled)
                self._spark_done = True
                self._cond.notify_all()

    # -- reports from the nodes ----------------------------------------------------------------

    def admit(self, hello: Hello) -> str | None:
        """Why the control server must refuse *hello* (None: admit it): a node of another
        attempt (a late task of an earlier one), a name that is not one of this attempt's
        nodes, or a node that registered already (its connection broke: it is lost)."""
        if hello.attempt != self.number:
            return (f"{hello.node} is of attempt {hello.attempt}, but the cluster runs attempt "
                    f"{self.number} now (a late task of an earlier attempt)")
        if hello.node not in self._names:
            return f"{hello.node!r} is not a node of this cluster"
        with self._cond:
            if hello.node in self._registered:
                return f"{hello.node} of attempt {self.number} registered already"
        return None

    def on_message(self, hello: Hello, message: Message, payload: bytes = b"") -> None:
        """A message of the node that registered with *hello* (called by the control server's
        reader thread)."""
        node = hello.node
        if isinstance(message, Log):
            log.info("[%s] %s", node, message.line)
            return
        if isinstance(message, Report):
            self._on_report(node, message)
            return
        with self._cond:
            self._last_seen[node] = time.monotonic()
            if isinstance(message, Hello):
                self._registered[node] = message
                log.info("%s registered from %s (attempt %d)", node, message.host, self.number)
                if self._stopping:
                    self._server.send(node, self.number, Stop())
            elif isinstance(message, TensorBoard):
                self.tensorboard_url = message.url
                log.info("TensorBoard at %s", self.tensorboard_url)
            elif isinstance(message, Done):
                self._done[node] = message
                if message.ok and message.resized:
                    self._resized.add(node)
                    log.info("%s left main_fun for the gang to grow", node)
                elif message.ok:
                    self._values[node] = payload
                    log.info("%s finished", node)
                else:
                    self._fail(node, _failure(node, message.error, message.traceback),
                               message.kind or FailureKind.RAISED)
            self._cond.notify_all()

    def on_lost(self, node: str, reason: str) -> None:
        """*node*'s connection ended."""
        with self._cond:
            self._lost.add(node)
            if node not in self._done and node not in self._silenced:  # (its failure is known)
                error = _failure(node, f"its Spark task lost the connection to the driver "
                                       f"({reason}): the executor or its Python worker died")
                self._link_failures[id(error)] = node
                self._fail(node, error, FailureKind.LOST)
            self._cond.notify_all()

    def _fail(self, node: str, error: ClusterError, kind: FailureKind) -> None:
        if self._over:
            # Torn down: a node that cannot answer "stop" (its task stuck, in a barrier
            # allGather, say) loses its connection when its job is cancelled; never the cause.
            log.info("%s (while the attempt was being stopped: not its cause)",
                     str(error).partition("\n")[0])
            return
        if self._stopping and not self._failures:
            return  # stopping on purpose: the node's end is expected
        # A process that died or went silent is the cause more likely than a peer's exception.
        self._failures.append((kind.rank, time.monotonic(), error))
        self._kinds[id(error)] = kind
        log.error("%s", error)

    def _check_heartbeats(self, quiet_after: float) -> bool:
        """Lose the nodes silent for longer than the heartbeat timeout; whether any other
        node running has been quiet for *quiet_after* s (called with the lock held)."""
        now = time.monotonic()
        quiet = False
        for node in sorted(set(self._registered) - set(self._done) - self._lost):
            silent_for = now - self._last_seen.get(node, now)
            if silent_for > self._heartbeat_timeout:
                self._silent(node, silent_for)
            elif silent_for > quiet_after:
                quiet = True
        return quiet

    def _silent(self, node: str, silent_for: float) -> None:
        """*node*'s task sent nothing for *silent_for* s: it is lost now (its host cut off or
        its process frozen), named with where it ran; nobody waits for it to confirm a stop."""
        hello = self._registered[node]
        where = f"host {hello.host}"
        if hello.task is not None and self._losses is not None:
            executor = self._losses.executor_of(hello.task)
            if executor is not None:
                where = f"executor {executor} on host {hello.host}"
                self._silent_executors.append(executor)
        if hello.container:
            where += f", YARN container {hello.container}"
        self._lost.add(node)
        self._silenced.add(node)
        # Its connection may never end by itself (a host cut off sends nothing, not even a
        # close): closing it ends its reader thread, which would otherwise outlive the attempt.
        self._server.disconnect(node, self.number)
        self._fail(node, _failure(
            node, f"no heartbeat for {silent_for:.0f} s (host unreachable or process frozen); "
                  f"its Spark task ran on {where}"), FailureKind.SILENT)

    def request_stop(self) -> None:
        """Stop the attempt (shutdown) whatever its state."""
        with self._cond:
            if not self._stopping and not self._complete():
                self.stopped_early = True
            self._stopping = True
            self._cond.notify_all()

    def _complete(self) -> bool:
        return all(n in self._done and self._done[n].ok for n in self._main)

    def _left_to_grow(self) -> bool:
        """Whether the training nodes left ``main_fun`` for the gang to grow (an evaluator
        goes on until stopped)."""
        training = {r.name for r in self.roles if r.runs_main and r.job_name != "evaluator"}
        return bool(self._resized) and all(
            n in self._done and self._done[n].ok for n in training)

    def grow(self, workers: int) -> bool:
        """Tell every running node that the application can place *workers* workers now
        (``grow``: ``main_fun`` leaves at its next boundary); once per attempt. Whether it
        was sent."""
        with self._cond:
            if self._stopping or self._failures or self.growing_to is not None:
                return False
            self.growing_to = workers
            running = sorted(set(self._registered) - set(self._done) - self._lost)
        log.info("the application can place %d workers: asking the nodes to restart at their "
                 "next boundary", workers)
        for node in running:
            self._server.send(node, self.number, Grow(workers=workers))
        return True

    def resized(self) -> bool:
        """Whether nodes left ``main_fun`` for the gang to grow (the attempt ended for it)."""
        with self._cond:
            return bool(self._resized)

    def failure(self) -> ClusterError | None:
        """The attempt's failure so far (the likeliest cause among those reported), or None."""
        with self._cond:
            return self._error()

    def interruption(self) -> ClusterError | None:
        """Why the attempt ends before ``main_fun`` finished: its failure (:meth:`failure`),
        or nodes leaving ``main_fun`` for the gang to grow; None while neither."""
        with self._cond:
            error = self._error()
            if error is None and self._resized:
                return ClusterError("the nodes left main_fun for the gang to restart larger")
            return error

    def lost_a_node(self) -> bool:
        """Whether the attempt's failure (:meth:`failure`) is a node lost with its executor,
        container or host (its Spark task's connection gone, or its heartbeats), not
        something the node's code did."""
        with self._cond:
            error = self._error()
            return error is not None and self._kinds.get(id(error)) in _LOSSES

    def values(self) -> dict[str, bytes]:
        """The pickled return values of the nodes that finished (``main_fun``'s, by node)."""
        with self._cond:
            return {n: v for n, v in self._values.items() if n in self._main}

    def registered(self) -> int:
        """How many nodes registered so far."""
        with self._cond:
            return len(self._registered)

    def feed_servers(self) -> dict[str, str]:
        """Each registered node's feed server (``input_mode="spark"``), by node name."""
        with self._cond:
            return {n: h.feed_server for n, h in self._registered.items() if h.feed_server}

    # -- waiting -------------------------------------------------------------------------------

    def cancelled_from_outside(self) -> bool:
        """Whether the attempt ended because someone other than the cluster cancelled its
        Spark job (pyspark's Ctrl-C handler, ``sc.cancelAllJobs()``): a stop, not a failure
        to restart the gang after; :meth:`failure` says so."""
        with self._cond:
            return self._cancelled is not None

    def _error(self) -> ClusterError | None:
        if self._cancelled is not None:  # the nodes' ends that followed are not the cause
            return self._cancelled
        if not self._failures:
            return None
        return min(self._failures, key=lambda f: (f[0], f[1]))[2]

    def wait_registered(self, timeout: float) -> None:
        """Block until every node registered, or a stop was requested (:meth:`request_stop`:
        then it returns at once, and :meth:`finish` tears the attempt down).

        Raises:
            ClusterError: a node failed (the likeliest cause), the Spark job ended or was
                cancelled, a node could not connect back, or *timeout* passed.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while (len(self._registered) < len(self.roles) and not self._failures
                   and not self._stopping):
                left = deadline - time.monotonic()
                if left <= 0 or self._spark_done:
                    if self._cancelled is not None:
                        raise self._cancelled
                    unreachable = self._unreachable()
                    if unreachable is not None:
                        raise unreachable
                    missing = sorted(self._names - set(self._registered))
                    cause = ""
                    if self._spark_error is not None:
                        cause = f": the Spark job failed: {self._spark_error}"
                    free = slots.free_slots(self._application)
                    now = (f"the application has {free} task slots now, other jobs may be "
                           "holding them") if free is not None else (
                           "other jobs may be holding the application's task slots")
                    refused = self._server.refused - self._refused_before
                    if refused:  # a node's hello may be among them (a flood evicts the oldest)
                        now += (f"; the control server refused {refused} connection(s) since "
                                "the attempt began (logged at WARNING with their peers)")
                    raise ClusterError(
                        f"only {len(self._registered)} of {len(self.roles)} nodes registered"
                        + (f" within {timeout:.0f} s" if math.isfinite(timeout) else "")
                        + f" (missing: {', '.join(missing)}){cause}; {now}"
                    )
                self._cond.wait(min(left, 0.5))
            error = self._error()
        if error is not None:
            self._name_loss()
            raise self.failure() or error

    def fail_to_register(self, error: ClusterError) -> None:
        """Make *error*, what :meth:`wait_registered` raised (nodes missing after the timeout,
        a node that could not connect back, the Spark job over), the attempt's failure unless
        a node's failure or a cancellation is known already: :meth:`finish` then ends the
        attempt and returns its failure as for a running attempt."""
        with self._cond:
            if self._failures or self._cancelled is not None or self._over:
                return
            self._failures.append((FailureKind.SPARK_JOB.rank, time.monotonic(), error))
            self._kinds[id(error)] = FailureKind.SPARK_JOB
            self._cond.notify_all()

    def _unreachable(self) -> ClusterError | None:
        """The error of nodes whose Spark tasks could not connect back to the control channel
        (they returned at once, saying so), or None."""
        for outcome in self._outcomes:
            if outcome.get("unreachable"):
                return ClusterError(
                    f"{outcome['node']} could not connect back to the driver's control channel "
                    f"at {outcome['unreachable']} from its executor ({outcome.get('error')}): "
                    "the executors must reach this address; give cluster.run(control_host=...) "
                    f"or {CONTROL_HOST_ENV} an address of this machine that they can reach",
                    node=str(outcome["node"]),
                )
        return None

    def wait_tensorboard(self, timeout: float) -> None:
        """Block until the chief reported TensorBoard's URL, or the chief's node ended before
        (TensorBoard goes with it: there is none to wait for, :attr:`tensorboard_url` stays
        None). Raises ClusterError on failure, or once *timeout* passed."""
        deadline = time.monotonic() + timeout
        chief = next((r.name for r in self.roles if r.is_chief), None)
        with self._cond:
            while (self.tensorboard_url is None and not self._failures and not self._spark_done
                   and chief not in self._done):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClusterError(f"TensorBoard did not start within {timeout:.0f} s")
                self._cond.wait(min(left, 0.5))
            error = self._error()
            ended_first = self.tensorboard_url is None and chief in self._done
        if error is not None:
            raise error
        if ended_first:
            log.warning("%s ended before its TensorBoard served: there is no TensorBoard",
                        chief)

    def finish(self) -> ClusterError | None:
        """Watch until the attempt is over, tear it down, and return its failure (or None)."""
        with self._cond:
            while True:
                if self._cancelled is not None:  # a stop: the nodes are stopped, no cause
                    break
                if self._failures:
                    first = min(f[1] for f in self._failures)
                    left = first + _CAUSE_WINDOW - time.monotonic()
                    # A node gone quiet is likelier the cause than a peer's exception (its
                    # host cut off, a peer's collective failing on it): wait for its
                    # heartbeat timeout, or its next heartbeat, before naming the cause.
                    quiet = self._check_heartbeats(quiet_after=_QUIET)
                    if left <= 0 and not quiet:
                        break
                    self._cond.wait(max(0.05, min(0.5, left) if not quiet else 0.5))
                    continue
                if self._stopping or self._complete() or self._left_to_grow():
                    break
                if self._spark_done:
                    self._failures.append((FailureKind.SPARK_JOB.rank, time.monotonic(),
                                           ClusterError(
                        f"the cluster's Spark job ended before every node finished: "
                        f"{self._spark_error}")))
                    log.error("the Spark job ended early: %s", self._spark_error)
                    continue
                self._check_heartbeats(quiet_after=self._heartbeat_timeout)
                self._cond.wait(min(0.5, self._heartbeat_timeout / 4))
            self._stopping = True
            self._over = True
            pending = set(self._registered) - set(self._done) - self._lost
        for node in sorted(pending):
            self._server.send(node, self.number, Stop())
        self._replace_silent_executors()
        self._teardown()
        self._name_loss()
        return self._error()

    def _replace_silent_executors(self) -> None:
        """Hand the executors of silent nodes back to Spark (:meth:`SparkApplication
        .replace_executor`): Spark would count their task slots until its own network timeout
        (``spark.network.timeout``, 120 s by default), and a restart placed on one would wait
        for a node that cannot register."""
        with self._cond:
            executors, self._silent_executors = self._silent_executors, []
        for executor in executors:
            try:
                replaced = self._application.replace_executor(executor)
            except Exception:  # the node is named as lost all the same
                log.warning("cannot ask Spark to replace executor %s", executor, exc_info=True)
                continue
            log.info("asked Spark to replace executor %s, whose node went silent: %s", executor,
                     "taken" if replaced else "refused")

    def _name_loss(self) -> None:
        """If the attempt's failure is a lost link, add why Spark lost the node's executor
        (waiting for Spark's reason until :data:`LOSS_WAIT` after the link dropped)."""
        with self._cond:
            if not self._failures or self._losses is None:
                return
            index = self._failures.index(min(self._failures, key=lambda f: (f[0], f[1])))
            rank, when, error = self._failures[index]
            node = self._link_failures.get(id(error))
            hello = self._registered.get(node) if node else None
        if hello is None or hello.task is None:
            return
        cause = self._losses.explain(hello.task, when + LOSS_WAIT - time.monotonic(),
                                     container=hello.container)
        if cause is None:
            return
        named = ClusterError(f"{error}: {cause}", node=node)
        log.error("%s", named)
        with self._cond:
            self._failures[index] = (rank, when, named)
            self._kinds[id(named)] = self._kinds[id(error)]

    def _teardown(self) -> None:
        deadline = time.monotonic() + STOP_TIMEOUT
        with self._cond:
            # A job cancelled by someone else ended while its tasks may still be stopping
            # their nodes (Spark kills tasks after it failed the job): they are waited for too.
            while not self._spark_done or self._cancelled is not None:
                pending = set(self._registered) - set(self._done) - self._lost
                left = deadline - time.monotonic()
                if not pending or left <= 0:
                    break
                self._cond.wait(min(left, 0.5))
            # With every task started and reported, the job ends by itself; tasks that never
            # started (no slot) would wait for one, and a silent node's task may never end
            # (its host is cut off): cancel at once.
            gang_started = len(self._registered) == len(self.roles)
            silent = bool(self._silenced)
            spark_done = self._spark_done
        if not spark_done and gang_started and not silent:
            self._thread.join(5.0)
        if self._thread.is_alive():
            log.info("cancelling the Spark job %s", self._group)
            self._cancelling = True
            try:
                self._application.cancel(self._group)
            except Exception:  # e.g. a Connect session's link reset: the attempt ends anyway
                log.warning("cannot cancel the Spark job %s: waiting for it to end by itself",
                            self._group, exc_info=True)
        self._thread.join(_JOIN_TIMEOUT)
        if self._thread.is_alive():
            log.error("the Spark job of %s did not end within %.0f s", self._group, _JOIN_TIMEOUT)
