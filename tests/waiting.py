"""Waiting in a test for what another thread or process does: a condition polled until it
holds or a deadline passes. A test checks such work once it has happened, never at one
moment it guesses (a test module cannot import ``conftest``, several share that name)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, every: float = 0.05) -> T:
    """Call *condition* every *every* seconds until it returns something true or *timeout*
    seconds have passed; its last value (checked once more at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(every)


def eventually(condition: Callable[[], T], *, timeout: float, what: str | Callable[[], str],
               every: float = 0.05) -> T:
    """:func:`wait_until` that fails the test when *condition* does not hold in time, saying
    *what* was awaited (a callable is asked at the failure, to show the state then); the
    condition's true value otherwise."""
    __tracebackhide__ = True
    value = wait_until(condition, timeout, every)
    if not value:
        awaited = what() if callable(what) else what
        raise AssertionError(f"{awaited}: not within {timeout:g} s")
    return value


def written(path: Path, *, timeout: float) -> str:
    """The text of *path* once a node or process has written it (it exists and is not empty);
    fails the test after *timeout* seconds."""
    __tracebackhide__ = True
    return eventually(lambda: path.exists() and path.read_text(), timeout=timeout,
                      what=f"{path} written", every=0.2)
