"""What ``Cluster.train`` returns: :class:`FeedReport` of the epochs it fed
(:class:`EpochReport`), or with ``block=False`` the :class:`Feeding` future of one."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpochReport", "FeedReport", "Feeding"]


@dataclass
class EpochReport:
    """One fed epoch.

    Attributes:
        epoch: its number (from 1, per feed).
        records: records delivered to each worker (by worker index).
        dropped: records not delivered: the equal-share remainder, and the data of workers
            that had stopped reading (all of it when the data was counted, in sync mode; else
            what the feeding tasks saw before they stopped pulling their input).
        jobs: feeding jobs (1; a stream: one per micro-batch).
        complete: False when :meth:`Feeding.stop` cut the epoch short.
        tasks: each feeding task's report: ``pid`` and ``host`` of the executor JVM that ran
            it, when it ``started``, had ``sent`` its last batch and ``ended`` (acknowledged;
            ``time.time()``), and per worker ``records``, ``batches``, ``dropped``, ``state``.
    """

    epoch: int
    records: dict[int, int] = field(default_factory=dict)
    dropped: int = 0
    jobs: int = 0
    complete: bool = True
    tasks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FeedReport:
    """What one ``Cluster.train`` call fed: the feed's name and its epochs."""

    feed: str
    epochs: list[EpochReport] = field(default_factory=list)
    stopped: bool = False


class Feeding(Future):  # type: ignore[type-arg]
    """A ``train(..., block=False)`` in progress: a :class:`concurrent.futures.Future` whose
    result is the :class:`FeedReport`. :meth:`stop` ends it early: a stream's query is
    stopped (its epoch then ends normally), batch feeding stops after cancelling the running
    job (the epoch it was feeding ends short)."""

    def __init__(self) -> None:
        super().__init__()
        self.query: Any = None  #: the StreamingQuery, for a streaming DataFrame
        self._stop = threading.Event()
        self._jobs: set[Any] = set()  # the feeding jobs in flight, cancelled by stop()

    def track(self, job: Any) -> None:
        """*job* (a :class:`~tfrecord_io.cluster.feed.jobs.FeedJob`) runs for this feeding:
        :meth:`stop` cancels it until it is :meth:`forget`-ten."""
        self._jobs.add(job)

    def forget(self, job: Any) -> None:
        """*job* has ended or was cancelled."""
        self._jobs.discard(job)

    def stop(self) -> None:
        """Stop feeding (see the class docs); returns at once."""
        self._stop.set()
        query = self.query
        if query is not None:
            query.stop()
        else:
            for job in list(self._jobs):
                job.cancel(wait=False)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()
