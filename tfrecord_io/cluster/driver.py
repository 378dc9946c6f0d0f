"""The driver side: :func:`run` starts a cluster on Spark's executors, :class:`Cluster` watches it.

One attempt is one Spark barrier job of one task per node (:mod:`tfrecord_io.cluster.task`),
submitted from a driver thread under its own job group so it can be cancelled. The driver's
control server (:mod:`tfrecord_io.cluster.channel`) hears every node register, its output lines,
heartbeats and outcome. The first failure (an exception, a killed or frozen node process, a
lost Spark task) stops every node, ends the Spark job and, with attempts left, starts the whole
gang again; else :meth:`Cluster.wait` raises :class:`ClusterError` naming the node.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from tfrecord_io import fs
from tfrecord_io.cluster import slots, tensorboard
from tfrecord_io.cluster.application import (
    CONTROL_HOST_ENV,
    SparkApplication,
    application_of,
)
from tfrecord_io.cluster.attempt import Attempt
from tfrecord_io.cluster.channel import ControlServer, control_key, feed_key, new_secret
from tfrecord_io.cluster.context import NodeContext
from tfrecord_io.cluster.description import AttemptDescription
from tfrecord_io.cluster.feed.coordinator import FedAttempt, FeedCoordinator
from tfrecord_io.cluster.feed.reports import Feeding, FeedReport
from tfrecord_io.cluster.feed.source import check_data
from tfrecord_io.cluster.messages import Hello, Log, Message, Report, Stop
from tfrecord_io.cluster.options import RunOptions, run_options
from tfrecord_io.cluster.progress import Progress
from tfrecord_io.cluster.results import MetricRecord, Metrics, Resize, Result, decode_value
from tfrecord_io.cluster.roles import Role
from tfrecord_io.cluster.roles import roles as make_roles
from tfrecord_io.errors import ClusterError

__all__ = ["run", "Cluster"]

log = logging.getLogger("tfrecord_io.cluster")

# Longer than the chief's task waits for TensorBoard to answer (tensorboard.DEFAULT_TIMEOUT), so
# that its own error, not this wait, reports a TensorBoard that did not start.
_TENSORBOARD_TIMEOUT = tensorboard.DEFAULT_TIMEOUT + 30.0
#: How often a smaller attempt (``min_workers``) looks whether the application has task slots
#: for more workers again.
_GROW_CHECK = 2.0
#: What :meth:`Cluster.wait` raises after a shutdown that stopped ``main_fun`` (or the gang's
#: restart) before it finished.
_SHUT_DOWN = "the cluster was shut down before main_fun finished"
_ids = itertools.count()


class Cluster:
    """A running TensorFlow cluster on Spark executors, made by :func:`run`.

    Use it as a context manager (a normal exit waits for ``main_fun`` to finish everywhere;
    an exception stops every node at once), or call :meth:`wait` and :meth:`shutdown`::

        with cluster.run(sc, main_fun, args, num_workers=2) as c:
            result = c.wait()                # result.chief: the chief's return value
    """

    def __init__(
        self,
        application: SparkApplication,
        main_fun: Callable[[Any, NodeContext], Any],
        args: Any,
        roles: list[Role],
        options: RunOptions,
        progress: bool | None = None,
        on_report: Callable[[MetricRecord], Any] | None = None,
        control_host: str | None = None,
    ) -> None:
        self._started = time.monotonic()
        self._application = application
        self._gang = roles  # every node asked for (an attempt's own: Attempt.roles)
        self._options = options
        self._max_attempts = options.max_attempts
        self._reservation_timeout = options.reservation_timeout
        from pyspark import cloudpickle  # noqa: PLC0415 - pyspark, the `spark` extra

        self._payload = _pickled(cloudpickle, main_fun, args)
        self._id = f"tfrecord-io-cluster-{os.getpid()}-{next(_ids)}-{int(time.time())}"
        secret = new_secret()  # stays here: the nodes and feeders get keys derived from it
        self._control_key = control_key(secret)
        self._feed_key = feed_key(secret)
        host = application.control_host(control_host)
        try:
            self._server = ControlServer(host, self._control_key, self._on_message,
                                         self._on_lost, admit=self._admit)
        except OSError as e:
            raise ClusterError(
                f"cannot listen for the nodes on {host} ({e}): give cluster.run(control_host=...) "
                f"or {CONTROL_HOST_ENV} an address of this machine that the executors can reach"
            ) from e
        self._lock = threading.Lock()
        self._attempt: Attempt | None = None
        self._shutdown = threading.Event()  # set under _lock (see _stop, _new_attempt)
        self._finished = threading.Event()
        # The cluster is over (its supervisor ended, or it was closed, also when run() failed):
        # its background watchers (_watch_growth) end.
        self._over = threading.Event()
        self._error: ClusterError | None = None
        self._supervisor: threading.Thread | None = None
        self._closed = False
        self._coordinator: FeedCoordinator | None = None  # with input_mode="spark", once started
        self._ending = threading.Event()  # wait() has begun: feeds end once fed
        self._losses: Any = None  # the application's ExecutorLosses, once started
        self._metrics = Metrics()
        # Nodes report on reader threads of their own: kept and queued in one step, so that
        # on_report sees the records in the order Result.metrics holds them.
        self._report_lock = threading.Lock()
        self._resizes: list[Resize] = []
        self._counted = 0  # failed attempts counted against max_attempts
        self._on_report = on_report
        self._progress = Progress(self._id, len(roles), enabled=progress)
        self._events: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._dispatcher = threading.Thread(target=self._dispatch, name=f"{self._id}-reports",
                                            daemon=True)
        self._dispatcher.start()
        self._result: Result | None = None
        # What wait() or train() told the caller: the errors raised (None: wait() returned).
        self._told: list[ClusterError | None] = []

    # -- public API ----------------------------------------------------------------------------

    @property
    def tensorboard_url(self) -> str | None:
        """Where TensorBoard serves ``log_dir`` (from the chief's executor), or None."""
        attempt = self._attempt
        return attempt.tensorboard_url if attempt is not None else None

    @property
    def name(self) -> str:
        """A name unique to this cluster: its Spark job groups and its node processes' working
        directories (``/tmp/NAME-worker-1-...``) carry it."""
        return self._id

    @property
    def control_address(self) -> str:
        """``host:port`` of the driver's control channel (authenticated; see the README)."""
        return self._server.address

    @property
    def metrics(self) -> Metrics:
        """What the nodes reported with ``ctx.report`` so far, in the order received (every
        attempt's): a list of :class:`~tfrecord_io.cluster.results.MetricRecord`."""
        return Metrics(self._metrics)

    @property
    def refused_connections(self) -> int:
        """How many connections to the control channel were refused: without the key, or a
        registration of another attempt or of a node connected already."""
        return self._server.refused

    def train(
        self,
        data: Any,
        num_epochs: int = 1,
        feed: str = "train",
        *,
        block: bool = True,
        record_type: str = "Example",
        trigger: dict[str, Any] | None = None,
        timeout: float | None = None,
        cache: bool = True,
    ) -> FeedReport | Feeding:
        """Feed *data* to the workers' ``ctx.feed(feed)`` (``input_mode="spark"``), *num_epochs*
        epochs of it: the first once every worker still reading the feed asked for it, the
        next ones ahead of the workers. The feed does not end here (call again for more epochs)
        but at :meth:`wait`/:meth:`shutdown`. The rules: :mod:`tfrecord_io.cluster.feed`.

        Args:
            data: a DataFrame (rows encoded to *record_type* in the JVM), an RDD of ``bytes``,
                or a streaming DataFrame (one epoch of micro-batches until its query stops).
                Cache batch data: it is counted (sync mode) and then read (see *cache*).
            num_epochs: epochs to feed (1 for a stream).
            feed: the feed's name; any number of feeds per cluster.
            block: True: return the :class:`FeedReport` once fed (every record in the workers'
                buffers); False: return a :class:`Feeding` (a Future; ``stop()`` ends it).
            record_type: ``"Example"``, ``"SequenceExample"`` or ``"ByteArray"`` (DataFrames).
            trigger: a stream's ``writeStream.trigger(**trigger)``, e.g. ``{"availableNow": True}``.
            timeout: with *block*, seconds to wait at most (None: no limit); then the feeding
                is stopped (the epoch in progress ends short on the workers) and
                ``TimeoutError`` raised.
            cache: with *num_epochs* > 1, keep the batches made for the first epoch in Spark's
                storage (memory, spilling to disk) and send the later epochs from there, so
                *data* is read and encoded once per call; they are freed when the call ends.
                False: every epoch computes and encodes *data* again (e.g. to reshuffle it).

        Raises:
            ClusterError: a node failed while being fed (named, with its traceback), feeding
                failed (e.g. the data changed since it was counted), or the cluster stopped.
            SparkConnectError: *data* is a streaming DataFrame of a Spark Connect session
                (streams are fed from a classic session only).
            TypeError: *data* is not a DataFrame of this cluster's kind of session (or, on a
                classic session, an RDD).
            ValueError: not ``input_mode="spark"``, or bad arguments.
            TimeoutError: *timeout* passed first.
        """
        if self._options.input_mode != "spark":
            raise ValueError("train() feeds clusters started with cluster.run(..., "
                             "input_mode='spark')")
        check_data(self._application, data)
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or num_epochs < 1:
            raise ValueError(f"num_epochs must be an int >= 1, not {num_epochs!r}")
        if not isinstance(feed, str) or not feed:
            raise ValueError(f"feed must be a non-empty name, not {feed!r}")
        coordinator = self._running_coordinator()
        feeding = coordinator.train(data, num_epochs, feed, record_type, trigger, cache)
        if not block:
            return feeding
        try:
            return feeding.result(timeout=timeout)
        except ClusterError as e:
            self._told.append(e)  # shutdown(wait=True) does not raise it a second time
            raise
        except TimeoutError:
            if feeding.done():  # the feeding itself raised TimeoutError
                raise
            feeding.stop()
            raise TimeoutError(f"feeding {feed!r} was not done after {timeout} s: it was "
                               "stopped (do the workers read it?)") from None

    def _running_coordinator(self) -> FeedCoordinator:
        coordinator = self._coordinator
        if coordinator is None or self._shutdown.is_set() or self._finished.is_set():
            raise ClusterError("the cluster is not running: nothing to feed")
        if self._ending.is_set():
            raise ClusterError(
                "wait() has begun, which ends every feed (also when it timed out): train() "
                "has no one to feed; call train() for every epoch before wait()")
        return coordinator

    def _fed(self, attempt: Attempt) -> FedAttempt:
        """What feeding needs of *attempt* (registered)."""
        return FedAttempt(attempt.number, [r.name for r in attempt.roles if r.fed],
                          attempt.feed_servers(), attempt.interruption,
                          reserved=len(attempt.roles),
                          restartable=(self._options.min_workers is not None
                                       or self._counted + 1 < self._max_attempts))

    def wait(self, timeout: float | None = None) -> Result:
        """Block until ``main_fun`` has finished on every node that runs it, and every node
        has stopped. With ``input_mode="spark"``, first waits for feedings in progress
        (``train(..., block=False)``) and then ends every feed, so that readers waiting for
        another epoch see the feed's end: from then on (also after a ``TimeoutError``),
        :meth:`train` raises ``ClusterError``.

        Returns:
            The :class:`~tfrecord_io.cluster.results.Result`: the chief's and every node's
            return value, the reported metrics, the attempts it took, the time.

        Raises:
            ClusterError: a node failed (and no attempts were left), or the cluster was shut
                down before ``main_fun`` finished. The message names the node (``worker:1``)
                and carries its traceback or the signal that ended it.
            TimeoutError: *timeout* seconds passed (feedings in progress included); the
                cluster keeps running.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        self._ending.set()
        coordinator = self._coordinator
        if coordinator is not None:  # readers waiting for another epoch see the feeds' end
            if not coordinator.end_all(after_pending=self._finished, deadline=deadline):
                raise TimeoutError(f"the feedings in progress did not end within {timeout} s; "
                                   "the cluster is still running")
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._finished.wait(left):
            raise TimeoutError(
                f"the cluster did not finish within {timeout} s; it is still running"
            )
        self._close()
        if self._error is not None:
            self._told.append(self._error)
            raise self._error
        self._told.append(None)
        if self._result is None:  # the supervisor ended without either: it says why in the log
            raise ClusterError("the cluster ended without a result or an error (see the "
                               "tfrecord_io.cluster log)")
        return self._result

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """End the cluster: with *wait* (the default), first wait for ``main_fun`` to finish
        on every node (as :meth:`wait`, at most *timeout* seconds), then stop; without, stop
        every node at once. Either way the Spark job ends and the control channel closes.
        Idempotent; returns once nothing of the cluster is left running.

        Raises:
            ClusterError: with *wait*, a node failed (see :meth:`wait`), unless :meth:`wait` or
                :meth:`train` already raised that failure.
            TimeoutError: with *wait*, *timeout* passed: the cluster was stopped.
        """
        if wait and not self._shutdown.is_set() and None not in self._told:
            try:
                self.wait(timeout)
            except TimeoutError:
                self._stop()
                raise TimeoutError(f"main_fun did not finish within {timeout} s: the cluster "
                                   "was stopped") from None
            except ClusterError as e:
                self._stop()
                if not any(e is told for told in self._told[:-1]):
                    raise
            except BaseException:
                self._stop()
                raise
        self._stop()

    def _stop(self) -> None:
        """Stop every node, end the Spark job, close the control channel. A restart in progress
        is abandoned (:meth:`_restart`); an attempt it makes after this is stopped as it is made
        (:meth:`_new_attempt`)."""
        with self._lock:
            self._shutdown.set()
            attempt = self._attempt
        if self._coordinator is not None:
            self._coordinator.close()
        if attempt is not None:
            attempt.request_stop()
        if self._supervisor is not None:
            self._supervisor.join()
        self._close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown(wait=exc_type is None)

    def __repr__(self) -> str:
        state = "finished" if self._finished.is_set() else "running"
        nodes = self._attempt.roles if self._attempt is not None else self._gang
        return f"Cluster({self._id}, {len(nodes)} nodes, {state})"

    # -- running -------------------------------------------------------------------------------

    def _placed(self, number: int, cause: str) -> list[Role]:
        """The nodes of attempt *number*, once the application has task slots for them: every
        node, or with ``min_workers`` fewer workers (not under it): on the first attempt when
        the application could not place them all within ``reservation_timeout``, on a restart
        as many as it can place now; a size other than the last attempt's is recorded
        (:class:`~tfrecord_io.cluster.results.Resize`, *cause*: why the last attempt ended).

        Raises:
            ClusterError: too few task slots (see :mod:`~tfrecord_io.cluster.slots`), or the
                cluster is shutting down (while waiting for them).
        """
        options, gang = self._options, self._gang
        if options.fewest_workers == options.num_workers:
            slots.wait_for(self._application, len(gang), self._reservation_timeout,
                           stop=self._shutdown)
            return gang
        others = len(gang) - _workers(gang)
        workers = slots.place(self._application, others, options.num_workers,
                              options.fewest_workers, self._reservation_timeout,
                              spare=int(options.input_mode == "spark"), wait=number == 0,
                              stop=self._shutdown)
        last = self._attempt
        before = _workers(last.roles if last is not None else gang)
        if workers != before:
            if number == 0:
                cause = (f"the application had task slots for {workers} of the "
                         f"{options.num_workers} workers")
            self._resizes.append(Resize(number, time.monotonic() - self._started, before,
                                        workers, cause))
            log.warning("%s: attempt %d starts with %d workers instead of %d (min_workers=%d, "
                        "num_workers=%d): %s", self._id, number + 1, workers, before,
                        options.fewest_workers, options.num_workers, cause)
        return [r for r in gang if r.job_name != "worker" or r.task_index < workers]

    def _new_attempt(self, number: int, roles: list[Role]) -> Attempt:
        """Attempt *number* of *roles*, the cluster's current one from now on; stopped at once
        (:meth:`Attempt.request_stop`) when the cluster is shutting down: :meth:`_stop` stops
        the attempt it finds, this one any attempt made after it."""
        description = AttemptDescription(
            self._options, cluster=self._id, driver=self._server.address,
            control_key=self._control_key, feed_key=self._feed_key, number=number,
            num_workers=_workers(roles),
        )
        attempt = Attempt(
            self._application, roles, description, self._payload, f"{self._id}-{number}",
            self._server, on_report=self._report, losses=self._losses,
            heartbeat_timeout=self._options.heartbeat_timeout,
        )
        with self._lock:
            self._attempt = attempt
            if self._shutdown.is_set():
                attempt.request_stop()
        return attempt

    def _start(self) -> None:
        """First attempt: slots, submit, wait for every node to register (and TensorBoard)."""
        try:
            roles = self._placed(0, "")
            if self._options.input_mode == "spark":
                slots.check_feeding(self._application, [r.name for r in roles])
            self._losses = self._application.executor_losses()
            attempt = self._new_attempt(0, roles)
            attempt.start()
            attempt.wait_registered(self._reservation_timeout)
            self._watch_growth(attempt)
            if self._options.tensorboard:
                attempt.wait_tensorboard(_TENSORBOARD_TIMEOUT)
            if self._options.input_mode == "spark":
                self._coordinator = FeedCoordinator(
                    self._application, self._feed_key, equal=self._options.mode == "sync",
                    group=self._id, attempt=self._fed(attempt))
        except BaseException:
            if self._attempt is not None:
                self._attempt.request_stop()
                self._attempt.finish()
            self._close()
            raise
        self._supervisor = threading.Thread(target=self._supervise, name=f"{self._id}", daemon=True)
        self._supervisor.start()

    def _supervise(self) -> None:
        attempt = self._attempt
        assert attempt is not None
        try:
            while True:
                error = attempt.finish()
                if error is None and attempt.resized() and not self._shutdown.is_set():
                    cause = (f"the application can place {attempt.growing_to} workers again "
                             "(the nodes left main_fun at a boundary)")
                    log.info("attempt %d ended to grow: %s", attempt.number + 1, cause)
                else:
                    # with min_workers, a node lost with its executor or host is no attempt used
                    lost = self._options.min_workers is not None and attempt.lost_a_node()
                    self._counted += error is not None and not lost
                    last = not lost and self._counted >= self._max_attempts
                    if (error is None or self._shutdown.is_set() or last
                            or attempt.cancelled_from_outside()):  # Ctrl-C: a stop
                        if error is None and attempt.stopped_early:
                            error = ClusterError(_SHUT_DOWN)
                        self._error = error
                        if error is None:
                            try:
                                self._result = self._make_result(attempt)
                            except ClusterError as e:
                                self._error = e
                        return
                    cause = str(error)
                    self._events.put(("failure", f"attempt {attempt.number + 1} failed: {error}"))
                    log.warning(
                        "attempt %d failed (%s); restarting every node: %s", attempt.number + 1,
                        "a lost node, not counted against max_attempts" if lost else
                        f"{self._counted} of max_attempts={self._max_attempts}", error,
                    )
                restarted = self._restart(attempt, cause, error)
                if restarted is None:
                    return
                attempt = restarted
        except Exception as e:  # a bug here must not lose the attempt's failure
            log.exception("%s: the cluster's supervisor failed", self._id)
            self._error = _internal_error(attempt.failure(), e)
            # Its nodes (and those of an attempt being started) stop too once the control
            # channel closes.
            attempt.request_stop()
            if self._attempt is not None:
                self._attempt.request_stop()
        finally:
            if self._error is not None and not self._shutdown.is_set():
                self._events.put(("failure", str(self._error)))
            self._finished.set()
            self._over.set()
            if self._coordinator is not None and self._error is not None:
                self._coordinator.fail(self._error)  # also the calls waiting for another attempt

    def _restart(self, last: Attempt, cause: str, error: ClusterError | None) -> Attempt | None:
        """The attempt after *last*, which ended for *cause* (*error*: its failure, if any),
        started once the application has task slots for it, its nodes registered; or None,
        :attr:`_error` saying why: too few slots, or a shutdown (looked at before placing the
        nodes, while waiting for slots, before making the attempt and before starting it;
        reported as a shutdown is). A failure while its nodes register (or their registration
        timing out) is the new attempt's failure: its :meth:`Attempt.finish` returns it, to be
        counted and decided on as a running attempt's."""
        number = last.number + 1
        if self._shutdown.is_set():
            self._abandon(number, cause)
            return None
        try:
            roles = self._placed(number, cause)
        except ClusterError as e:
            if self._shutdown.is_set():  # it ended the wait for slots
                self._abandon(number, cause)
                return None
            # say what the gang lost, too
            self._error = ClusterError(f"{e}; the gang was restarting after: {cause}",
                                       node=error.node if error is not None else None)
            return None
        attempt = self._new_attempt(number, roles)
        if self._shutdown.is_set():  # made stopped: not started
            self._abandon(number, cause)
            return None
        attempt.start()  # a shutdown from now on stops it (see _stop)
        try:
            attempt.wait_registered(self._reservation_timeout)  # returns early on a stop
        except ClusterError as e:
            attempt.fail_to_register(e)
            return attempt
        self._watch_growth(attempt)
        if self._shutdown.is_set():
            attempt.request_stop()
        elif self._coordinator is not None:
            self._refeed(self._coordinator, attempt)
        return attempt

    def _abandon(self, number: int, cause: str) -> None:
        """Give up starting attempt *number* for a shutdown: the cluster ends as a shutdown
        does, saying what the gang was restarting after."""
        log.info("%s: the cluster was shut down while attempt %d was starting", self._id,
                 number + 1)
        self._error = ClusterError(f"{_SHUT_DOWN}; the gang was restarting after: {cause}")

    def _watch_growth(self, attempt: Attempt) -> None:
        """With ``min_workers``, while *attempt* runs with fewer than ``num_workers`` workers,
        look every :data:`_GROW_CHECK` s whether the application has task slots for more
        again, and then ask the nodes to grow (:meth:`Attempt.grow`); from a thread of its
        own, until the attempt is over or the cluster is (:attr:`_over`, set also when
        :meth:`_start` fails after this)."""
        options = self._options
        workers = _workers(attempt.roles)
        if options.min_workers is None or workers >= options.num_workers:
            return
        others = len(attempt.roles) - workers
        spare = int(options.input_mode == "spark")

        def watch() -> None:
            while self._attempt is attempt and not self._over.wait(_GROW_CHECK):
                try:
                    room = slots.room(self._application, others, spare)
                except Exception:  # the application is ending: no growth
                    log.debug("cannot count the application's task slots", exc_info=True)
                    return
                if room is not None and room > workers:
                    attempt.grow(min(room, options.num_workers))
                    return

        threading.Thread(target=watch, name=f"{self._id}-{attempt.number}-grow",
                         daemon=True).start()

    def _refeed(self, coordinator: FeedCoordinator, attempt: Attempt) -> None:
        """A new attempt runs: the feeding schedule feeds it every train() call again (and
        ends its feeds once fed when wait() has begun)."""
        coordinator.restart(self._fed(attempt))
        if self._ending.is_set():  # wait() ended the failed attempt's feeds already
            threading.Thread(target=coordinator.end_all, args=(self._finished,),
                             name=f"{self._id}-end-feeds", daemon=True).start()

    def _close(self) -> None:
        """End what is left of the cluster on the driver: watchers, feeds, the control server,
        the reports' thread (not waited for when it is the caller: an ``on_report`` that shut
        the cluster down), the progress line. Idempotent."""
        self._over.set()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            coordinator = self._coordinator
        if coordinator is not None:
            coordinator.close()
        self._server.close()
        self._events.put(None)
        if threading.current_thread() is not self._dispatcher:
            self._dispatcher.join(10.0)
        self._progress.close()

    def _make_result(self, attempt: Attempt) -> Result:
        """The attempt's :class:`Result`.

        Raises:
            ClusterError: a node's return value cannot be unpickled here, naming the node.
        """
        values = {}
        for node, data in attempt.values().items():
            try:
                values[node] = decode_value(data) if data else None
            except Exception as e:  # whatever unpickling a user's value raises
                raise ClusterError(
                    f"the return value of {node}'s main_fun cannot be unpickled on the driver "
                    f"({type(e).__name__}: {e}): return plain values (numbers, str, lists, "
                    "dicts, numpy arrays), or classes importable on the driver", node=node
                ) from e
        chief = next((r.name for r in attempt.roles if r.is_chief), None)
        return Result(chief=values.get(chief) if chief else None, values=values,
                      metrics=Metrics(self._metrics), attempts=attempt.number + 1,
                      elapsed=time.monotonic() - self._started, resizes=list(self._resizes))

    # -- reports and progress (one thread: the control channel's readers never wait on them) --

    def _report(self, node: str, report: Report) -> None:
        record = MetricRecord(node, report.attempt, report.step, report.time, dict(report.values))
        # Kept here, as received: a node's reports come before its end, so the result made
        # once every node ended has them all (the dispatcher may not have reached them yet).
        with self._report_lock:
            self._metrics.append(record)
            self._events.put(("record", record))

    def _dispatch(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            kind, item = event
            try:
                if kind == "record":
                    self._progress.record(item)
                    if self._on_report is not None:
                        self._on_report(item)
                elif kind == "attempt":
                    self._progress.attempt(*item)
                elif kind == "failure":
                    self._progress.failure(item)
            except Exception:
                log.exception("on_report raised")

    # -- control channel callbacks -------------------------------------------------------------

    def _admit(self, hello: Hello) -> str | None:
        attempt = self._attempt
        if attempt is None:
            return "no attempt of the cluster is running"
        return attempt.admit(hello)

    def _on_message(self, hello: Hello, message: Message, payload: bytes) -> None:
        attempt = self._attempt
        if attempt is None:
            return
        if hello.attempt != attempt.number:
            if isinstance(message, (Log, Report)):  # an earlier attempt's output still counts
                attempt.on_message(hello, message)
            else:  # the state of an attempt already over: tell a late task to stop
                self._server.send(hello.node, hello.attempt, Stop())
            return
        attempt.on_message(hello, message, payload)
        if isinstance(message, Hello):
            self._events.put(("attempt", (attempt.number, attempt.registered(),
                                          len(attempt.roles))))

    def _on_lost(self, hello: Hello, reason: str) -> None:
        attempt = self._attempt
        # A connection of an attempt already over (its task ended late) is no new failure.
        if attempt is not None and hello.attempt == attempt.number:
            attempt.on_lost(hello.node, reason)


def _internal_error(failure: ClusterError | None, error: Exception) -> ClusterError:
    """What :meth:`Cluster.wait` raises when the supervisor itself failed with *error* (a
    bug, or a call into Spark that raised): the attempt's *failure* if any, naming *error*."""
    what = (f"the cluster's driver failed supervising it ({type(error).__name__}: {error}; "
            "its traceback is in the tfrecord_io.cluster log)")
    if failure is None:
        internal = ClusterError(f"{what}: the cluster was stopped")
    else:
        internal = ClusterError(f"{failure}\n--- and then {what} ---", node=failure.node)
    internal.__cause__ = error
    return internal


def _workers(roles: list[Role]) -> int:
    """How many of *roles* are workers."""
    return sum(r.job_name == "worker" for r in roles)


def run(
    spark: Any,
    main_fun: Callable[[Any, NodeContext], Any],
    args: Any = None,
    *,
    num_workers: int,
    min_workers: int | None = None,
    num_ps: int = 0,
    mode: str = "sync",
    evaluator: bool = False,
    tensorboard: bool = False,
    log_dir: str | None = None,
    keras: str = "default",
    reservation_timeout: float = 60.0,
    max_attempts: int = 1,
    heartbeat_timeout: float = 30.0,
    env: dict[str, str] | None = None,
    input_mode: str = "tensorflow",
    progress: bool | None = None,
    on_report: Callable[[MetricRecord], Any] | None = None,
    control_host: str | None = None,
) -> Cluster:
    """Start a TensorFlow cluster on the executors of *spark* running ``main_fun(args, ctx)``.

    Returns once every node has a Spark task slot and has registered with the driver (and
    TensorBoard answers, with ``tensorboard=True``); training goes on in the background: call
    :meth:`Cluster.wait`.

    Args:
        spark: the SparkContext, or a SparkSession: classic, or a Spark Connect client (then
            the gang is a barrier stage of the DataFrame API, Spark >= 3.5, and
            ``input_mode="spark"`` feeds DataFrames, not RDDs or streams). The cluster takes
            one task slot per node, all at once (barrier).
        main_fun: ``main_fun(args, ctx)``, run in a fresh process on each node that runs user
            code; *ctx* is a :class:`NodeContext`. It must be importable on the executors, or
            defined in the driver's ``__main__`` (then it travels by value).
        args: passed to ``main_fun`` as is (pickled with the function).
        num_workers: worker nodes.
        min_workers: the fewest workers an attempt may start with (1 to *num_workers*;
            None: always *num_workers*). An attempt, the first and each restart, starts once
            the application has task slots for *num_workers* workers (and its other nodes,
            and with ``input_mode="spark"`` one feeding task), or, after waiting
            *reservation_timeout* seconds, with as many workers as there are slots for, at
            least *min_workers*; where the master URL and configuration say the slots for
            *num_workers* will never be there, it does not wait for them. ``ctx.num_workers``
            is the size of the current attempt: deal the data and the global batch by it.
            With it, a node lost with its executor, container or host restarts the gang
            without counting against *max_attempts* (an exception in ``main_fun`` still
            counts); every change of size is in ``Result.resizes``.
        num_ps: parameter servers (``mode="ps"`` only, at least 1 there).
        mode: ``"sync"`` (MultiWorkerMirroredStrategy: every worker runs ``main_fun``, worker 0
            is the chief) or ``"ps"`` (ParameterServerStrategy: ps and workers serve, a chief
            node runs ``main_fun`` as the coordinator).
        evaluator: add an evaluator node that runs ``main_fun`` with ``job_name="evaluator"``.
        tensorboard: serve *log_dir* with TensorBoard from the chief's executor
            (:attr:`Cluster.tensorboard_url`).
        log_dir: the log directory (local or ``hdfs://``); checkpoints go to
            ``LOG_DIR/checkpoints`` (``ctx.checkpoint_dir``).
        keras: ``"default"`` (Keras 3: custom training loops) or ``"legacy"`` (tf-keras with
            ``TF_USE_LEGACY_KERAS=1``: ``model.fit`` under both strategies).
        reservation_timeout: seconds to wait for task slots (with *min_workers*: for slots
            for every worker) and for every node to register; ``math.inf`` for no limit.
        max_attempts: attempts in all: after a failure the whole gang restarts, with
            ``ctx.attempt`` counting up, until one succeeds or they are used up (also a
            restart whose nodes fail or time out while they register uses one). With
            ``input_mode="spark"``, every :meth:`Cluster.train` call is fed again, from its
            first epoch, to each new attempt (a call in progress goes on there; a stream's
            call fails): the nodes resume from their checkpoint and read on.
        heartbeat_timeout: seconds without a heartbeat from a node's Spark task (sent every
            2 s) after which the node is lost: its host unreachable (a cut link, a dead
            machine) or its process frozen. The attempt fails at once, naming the node, its
            host and executor; nothing waits for the silent node. A node process silent this
            long to its task (it beats every second; frozen, stopped) is killed by the task
            and reported. At least 5, and finite.
        env: extra environment variables for every node process, set before TensorFlow loads,
            over the object-store settings the nodes get from this process
            (:func:`tfrecord_io.fs.environment`: ``s3://`` configured here works there).
        input_mode: ``"tensorflow"`` (the nodes read their data themselves, e.g. with
            ``ctx.dataset``) or ``"spark"``: the driver feeds Spark data with
            :meth:`Cluster.train`, read with ``ctx.feed`` (see :mod:`tfrecord_io.cluster.feed`).
        progress: the progress line on the driver (tqdm; in a notebook its widget) with
            the attempt, the nodes and the last ``ctx.report``. None (the default) shows it
            where it renders, a terminal or a notebook, and not where standard error is a file
            (spark-submit on YARN, CI); True always, False never. Without the line, each
            attempt and each node's last report are logged, one line each. A failure's
            traceback is printed either way; node output goes to the ``tfrecord_io.cluster``
            logger.
        on_report: called on the driver with each
            :class:`~tfrecord_io.cluster.results.MetricRecord` a node reports, in order, from
            one thread (not the one that called ``run``).
        control_host: the address of this machine the control channel listens on, which
            every executor must reach (default: ``TFRECORD_IO_CONTROL_HOST`` if set, else
            ``spark.driver.host`` of a classic application, else, over Spark Connect, this
            machine's address on its route to the Connect server's driver).

    Raises:
        ClusterError: too few task slots, the nodes could not connect back to
            *control_host*, or did not all register within *reservation_timeout* (every node
            started is stopped first).
        ValueError: bad arguments.
    """
    if not callable(main_fun):
        raise ValueError(f"main_fun must be callable, not {main_fun!r}")
    node_roles = make_roles(mode, num_workers, num_ps, evaluator)
    options = run_options(
        mode=mode, num_workers=num_workers, log_dir=log_dir, keras=keras,
        tensorboard=tensorboard, reservation_timeout=reservation_timeout,
        max_attempts=max_attempts, env={**fs.environment(), **(env or {})},
        input_mode=input_mode, heartbeat_timeout=heartbeat_timeout, min_workers=min_workers,
    )
    if on_report is not None and not callable(on_report):
        raise ValueError(f"on_report must be callable, not {on_report!r}")
    application = application_of(spark)
    shown = None if progress is None else bool(progress)
    cluster = Cluster(application, main_fun, args, node_roles, options, progress=shown,
                      on_report=on_report, control_host=control_host)
    cluster._start()  # noqa: SLF001 - our own class
    return cluster


def _pickled(cloudpickle: Any, main_fun: Any, args: Any) -> bytes:
    """``(main_fun, args)`` pickled for the nodes.

    Raises:
        TypeError: one of them cannot be pickled, saying which.
    """
    try:
        return bytes(cloudpickle.dumps((main_fun, args)))
    except Exception as e:
        for what, value in (("main_fun", main_fun), ("args", args)):
            try:
                cloudpickle.dumps(value)
            except Exception:  # noqa: BLE001 - this one is the culprit
                raise TypeError(
                    f"cluster.run: {what} cannot be pickled for the nodes ({e}): pass only "
                    "what pickles (no open files, locks, SparkContexts or sessions; make "
                    "clients inside main_fun)") from e
        raise

