"""tfrecord_io.cluster.oom: a process killed by the kernel's out-of-memory killer is told from
one killed by hand, by the kill counts of its memory cgroup (a real cgroup with a limit, a real
OOM kill)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator

from tfrecord_io.cluster.oom import OomWatch

from memory_cgroups import memory_limited

# Waits for a line on stdin, then touches 512 MiB.
_GREEDY = "import sys; sys.stdin.readline(); x = b'\\x01' * (512 << 20); sys.stdin.readline()"


@contextlib.contextmanager
def _greedy_in(limit: int) -> Iterator[subprocess.Popen]:
    """A process in a new memory cgroup of *limit* bytes, waiting to touch 512 MiB
    (:func:`_oom_killed`); killed, and the cgroup removed, at the end."""
    with memory_limited(limit) as cgroup:
        process = subprocess.Popen([sys.executable, "-c", _GREEDY], stdin=subprocess.PIPE)
        try:
            cgroup.add(process.pid)
            yield process
        finally:
            process.kill()
            process.wait()


def _oom_killed(process: subprocess.Popen) -> None:
    """Lets *process* touch more than its cgroup's limit; the OOM killer ends it."""
    process.stdin.write(b"go\n")
    process.stdin.flush()
    assert process.wait(60) == -signal.SIGKILL


def test_a_process_the_oom_killer_ended_is_said_to_be_out_of_memory():
    with _greedy_in(128 << 20) as process:
        watch = OomWatch(process.pid)
        _oom_killed(process)
        cause = watch.cause()  # while its cgroup is there
    assert cause is not None
    assert "out-of-memory killer killed a process of its memory cgroup" in cause
    assert "spark.executor.memoryOverhead" in cause


def test_a_process_killed_by_hand_is_not_said_to_be_out_of_memory():
    with _greedy_in(1 << 30) as process:
        watch = OomWatch(process.pid)
        process.kill()
        assert process.wait(60) == -signal.SIGKILL
        assert watch.cause() is None


def test_without_its_cgroup_the_hosts_count_tells_of_an_oom_kill_meanwhile():
    watch = OomWatch(2**22 + 7)  # no such process: no cgroup to read
    assert watch.cause() is None
    with _greedy_in(128 << 20) as process:
        _oom_killed(process)
    cause = watch.cause()
    assert cause is not None
    assert "ended a process on its host while it ran, most likely this one" in cause
