"""What ``Cluster.train`` returns: :class:`FeedReport` of the epochs it fed
(:class:`EpochReport`), or with ``block=False`` the :class:`Feeding` future of one."""

from __future__ import annotations

import threading
from collections.abc import Callable
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

    def add_tasks(self, tasks: list[dict[str, Any]]) -> None:
        """Count a feeding job's task reports (the JSON the jar's ``FeedSender`` returns)."""
        for task in tasks:
            self.tasks.append(task)
            for worker, sent in task["workers"].items():
                w = int(worker)
                self.records[w] = self.records.get(w, 0) + sent["records"]
                self.dropped += sent["dropped"]


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

    def __init__(self, on_stop: Callable[[], None] = lambda: None) -> None:
        super().__init__()
        self.query: Any = None  #: the StreamingQuery, for a streaming DataFrame
        self._stop = threading.Event()
        self._on_stop = on_stop

    def stop(self) -> None:
        """Stop feeding (see the class docs); returns at once."""
        self._stop.set()
        self._on_stop()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()
