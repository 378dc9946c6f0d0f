"""Memory cgroups made for a test (as root): a limit that the kernel's out-of-memory killer
enforces on the processes put in it, under cgroup v1's memory hierarchy or v2's unified one;
removed when the test ends."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator

_ROOT = "/sys/fs/cgroup"


class MemoryCgroup:
    """A memory cgroup with a limit; :meth:`add` moves a process into it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def add(self, pid: int) -> None:
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))


def _make(limit: int) -> str:
    name = f"tfrecord-io-test-{uuid.uuid4().hex[:12]}"
    v1 = os.path.join(_ROOT, "memory")
    if os.path.isfile(os.path.join(v1, "memory.limit_in_bytes")):
        path = os.path.join(v1, name)
        os.mkdir(path)
        with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
            f.write(str(limit))
        return path
    path = os.path.join(_ROOT, name)  # v2: the memory controller enabled for the children
    os.mkdir(path)
    with open(os.path.join(path, "memory.max"), "w") as f:
        f.write(str(limit))
    return path


@contextlib.contextmanager
def memory_limited(limit: int) -> Iterator[MemoryCgroup]:
    """A new memory cgroup limited to *limit* bytes, removed at the end (its processes must
    have ended by then: it is retried for a few seconds while they are reaped)."""
    path = _make(limit)
    try:
        yield MemoryCgroup(path)
    finally:
        deadline = time.monotonic() + 10.0
        while True:
            try:
                os.rmdir(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
