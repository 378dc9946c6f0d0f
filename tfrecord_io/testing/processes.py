"""Ending the test servers' child processes, each the leader of a process group of its own
(the S3 server, the object-store emulators, PostgreSQL): one polite signal, a grace period, then
SIGKILL to the whole group, so that nothing they started outlives them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

__all__ = ["kill_group", "stop_group"]


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
