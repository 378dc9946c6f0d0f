"""tfrecord_io.cluster.oom: a process killed by the kernel's out-of-memory killer is told from
one killed by hand, by the kill counts of its memory cgroup (a real cgroup with a limit, a real
OOM kill)."""

from __future__ import annotations

import signal
import subprocess
import sys

from tfrecord_io.cluster.oom import OomWatch

from memory_cgroups import memory_limited

# Waits for a line on stdin, then touches 512 MiB.
_GREEDY = "import sys; sys.stdin.readline(); x = b'\\x01' * (512 << 20); sys.stdin.readline()"


def _greedy() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _GREEDY], stdin=subprocess.PIPE)


def _oom_killed(cgroup, process: subprocess.Popen) -> None:
    """Lets *process* (in *cgroup*) touch more than the cgroup's limit; the OOM killer ends it."""
    process.stdin.write(b"go\n")
    process.stdin.flush()
    assert process.wait(60) == -signal.SIGKILL


def test_a_process_the_oom_killer_ended_is_said_to_be_out_of_memory():
    with memory_limited(128 << 20) as cgroup:
        process = _greedy()
        try:
            cgroup.add(process.pid)
            watch = OomWatch(process.pid)
            _oom_killed(cgroup, process)
        finally:
            process.kill()
            process.wait()
        cause = watch.cause()
    assert cause is not None
    assert "out-of-memory killer killed a process of its memory cgroup" in cause
    assert "spark.executor.memoryOverhead" in cause


def test_a_process_killed_by_hand_is_not_said_to_be_out_of_memory():
    with memory_limited(1 << 30) as cgroup:
        process = _greedy()
        try:
            cgroup.add(process.pid)
            watch = OomWatch(process.pid)
            process.kill()
            assert process.wait(60) == -signal.SIGKILL
        finally:
            process.kill()
            process.wait()
        assert watch.cause() is None


def test_without_its_cgroup_the_hosts_count_tells_of_an_oom_kill_meanwhile():
    watch = OomWatch(2**22 + 7)  # no such process: no cgroup to read
    assert watch.cause() is None
    with memory_limited(128 << 20) as cgroup:
        process = _greedy()
        try:
            cgroup.add(process.pid)
            _oom_killed(cgroup, process)
        finally:
            process.kill()
            process.wait()
    cause = watch.cause()
    assert cause is not None
    assert "ended a process on its host while it ran, most likely this one" in cause
