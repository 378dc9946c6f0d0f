"""The jobs the feeding schedule starts (its :class:`~tfrecord_io.cluster.feed.schedule.Job`):
:class:`BaseJob` holds a job's end, :class:`ThreadJob` runs plain work in a thread. The feed
source's jobs (:mod:`~tfrecord_io.cluster.feed.source`) and a stream's
(:mod:`~tfrecord_io.cluster.feed.stream`) are built on it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["BaseJob", "ThreadJob"]


class BaseJob:
    """A job's end: value or error, and a wake-up call for whoever waits on it."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._callbacks: list[Callable[[BaseJob], None]] = []
        self._value: Any = None
        self._error: BaseException | None = None

    def end(self, value: Any = None, error: BaseException | None = None) -> None:
        """Record the end (*value*, or *error*), wake the waiter and run the done-callbacks."""
        with self._lock:
            self._value, self._error = value, error
            self._ended.set()
            callbacks, self._callbacks = self._callbacks, []
        self._wake()
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback: Callable[[BaseJob], None]) -> None:
        """Call ``callback(self)`` once it has ended: at once (in this thread) if it has, else
        in the thread that ends it."""
        with self._lock:
            if not self._ended.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def done(self) -> bool:
        """Whether it has ended."""
        return self._ended.is_set()

    def wait(self, timeout: float) -> bool:
        """Wait up to *timeout* seconds for the end; whether it has ended."""
        return self._ended.wait(timeout)

    @property
    def error(self) -> BaseException | None:
        """Why it failed, or None."""
        return self._error

    @property
    def value(self) -> Any:
        """Its result."""
        return self._value


class ThreadJob(BaseJob):
    """*work* run in a thread of its own (a call's planning). *discard* frees the value of a
    job that was cancelled (nobody takes it): at the cancel if the value was there, else as it
    comes."""

    def __init__(self, name: str, work: Callable[[], Any], wake: Callable[[], None],
                 discard: Callable[[Any], None] = lambda value: None) -> None:
        super().__init__(wake)
        self._discard = discard
        self._cancelled = False
        self._discarded = False
        threading.Thread(target=self._run, args=(work,), name=name, daemon=True).start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            value = work()
        except BaseException as e:  # noqa: BLE001 - the job's error, read by the schedule
            self.end(error=e)
            return
        self.end(value)
        self._discard_once()

    def cancel(self) -> None:
        """Planning is not cancelled (it counts and builds; nothing waits on the nodes): its
        result is dropped, and freed by *discard* (in a thread: this returns at once)."""
        with self._lock:
            self._cancelled = True
        if self.done():
            threading.Thread(target=self._discard_once, name="feed-plan-discard",
                             daemon=True).start()

    def _discard_once(self) -> None:
        """Free the value of a cancelled job that succeeded, once (whichever of the end and the
        cancel comes last calls it)."""
        with self._lock:
            if not self._cancelled or self._discarded or self._error is not None:
                return
            self._discarded = True
        self._discard(self._value)
