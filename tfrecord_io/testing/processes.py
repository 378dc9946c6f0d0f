"""The test servers' child processes, each the leader of a process group of its own (the S3
server, the object-store emulators, PostgreSQL): ending them (one polite signal, a grace period,
then SIGKILL to the whole group, so that nothing they started outlives them), and the CPU time
a process has used, which the benchmarks add to their own."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

__all__ = ["bytes_written", "cpu_seconds", "kill_group", "stop_group"]


def stop_group(process: subprocess.Popen[bytes] | None, *, first: int = signal.SIGTERM,
               to_group: bool = True, grace: float = 10.0) -> None:
    """Ends *process* (started with ``start_new_session=True``): *first* to its process group
    (or, with *to_group* false, to the process alone: a server that stops its own children, as
    PostgreSQL's postmaster does), SIGKILL to the group after *grace* seconds. Nothing happens
    when it has ended already or is None."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        if to_group:
            os.killpg(process.pid, first)
        else:
            process.send_signal(first)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        kill_group(process)


def kill_group(process: subprocess.Popen[bytes] | None) -> None:
    """Ends *process* and its process group at once (SIGKILL), as a crash would."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def bytes_written(pid: int | None) -> int:
    """The bytes that process *pid* has written so far, to sockets and files alike (``wchar``
    of ``/proc/PID/io``); 0 when *pid* is None, the process is gone or there is no ``/proc``."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def cpu_seconds(pid: int | None) -> float:
    """The user and system CPU seconds that process *pid* (all its threads) has used so far,
    from ``/proc``; 0 when *pid* is None, the process is gone or there is no ``/proc``."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the name may hold spaces
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
