"""What :func:`tfrecord_io.cluster.run` was asked for, checked once: :class:`RunOptions`."""

from __future__ import annotations

import math
import os
import re
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHECKPOINT_SUBDIR",
    "INPUT_MODES",
    "KERAS",
    "NODE_VARIABLES",
    "RunOptions",
    "default_checkpoint_dir",
    "run_options",
]

#: ``keras=``: Keras 3 (``"default"``) or tf-keras (``"legacy"``).
KERAS = ("default", "legacy")
#: ``input_mode=``: the nodes read their data themselves, or the driver feeds them.
INPUT_MODES = ("tensorflow", "spark")


#: The variables of a node process's environment that its Spark task sets itself
#: (:mod:`tfrecord_io.cluster.task`), over anything ``env=`` gives (``TF_USE_LEGACY_KERAS``:
#: as the ``keras`` option says): ``run`` refuses them in ``env``, saying why (the value).
#: Not among them: ``TF_CPP_MIN_LOG_LEVEL`` (2 unless ``env`` gives it), ``PYTHONPATH``
#: (tfrecord-io's directory, then ``env``'s) and ``CUDA_VISIBLE_DEVICES`` (the task's GPUs when
#: Spark gives it some, else ``env``'s).
NODE_VARIABLES = {
    "TF_CONFIG": "each node's cluster spec and role, made from the addresses its task gathered",
    "TF_USE_LEGACY_KERAS": "the keras option decides it: pass keras='legacy' for tf-keras",
    "TFRECORD_IO_NODE": "the node's name",
    "TFRECORD_IO_HEARTBEAT_FD": "the pipe of the node's heartbeats to its task",
    "TFRECORD_IO_REPORT_FD": "the pipe of ctx.report's records to its task",
    "PYTHONUNBUFFERED": "the node's output reaches the driver as it is written",
}


#: Where checkpoints go under ``log_dir``.
CHECKPOINT_SUBDIR = "checkpoints"


@dataclass(frozen=True)
class RunOptions:
    """The options of one cluster, as :func:`run_options` checked them (the arguments of
    :func:`tfrecord_io.cluster.run`; *checkpoint_dir* is ``LOG_DIR/checkpoints`` or, without a
    log directory, a fresh local path)."""

    mode: str
    num_workers: int
    log_dir: str | None
    checkpoint_dir: str
    keras: str
    tensorboard: bool
    reservation_timeout: float
    max_attempts: int
    env: dict[str, str] = field(repr=False)  # may hold an object store's credentials
    input_mode: str
    heartbeat_timeout: float = 30.0
    #: The fewest workers an attempt may start with (None: ``num_workers``, a fixed size).
    min_workers: int | None = None

    @property
    def fewest_workers(self) -> int:
        """The fewest workers an attempt may start with."""
        return self.num_workers if self.min_workers is None else self.min_workers


#: The shortest ``heartbeat_timeout`` accepted: the nodes' tasks send a heartbeat every 2 s.
MIN_HEARTBEAT_TIMEOUT = 5.0


def run_options(
    *,
    mode: str,
    num_workers: int,
    log_dir: Any,
    keras: str,
    tensorboard: bool,
    reservation_timeout: float,
    max_attempts: int,
    env: dict[str, str] | None,
    input_mode: str,
    heartbeat_timeout: float = 30.0,
    min_workers: int | None = None,
) -> RunOptions:
    """Check :func:`tfrecord_io.cluster.run`'s options (*mode* and *num_workers* are checked
    with the roles, by :func:`tfrecord_io.cluster.roles.roles`). *reservation_timeout* may be
    ``math.inf`` (no limit: waiting as long as it takes); *heartbeat_timeout* may not (a node
    gone silent would never be lost). *env* may not give :data:`NODE_VARIABLES`.

    Raises:
        ValueError: an option out of its range, named with what it accepts; a variable of
            *env* that could not reach the nodes as given, named (never its value).
    """
    if input_mode not in INPUT_MODES:
        raise ValueError(f"input_mode must be one of {INPUT_MODES}, not {input_mode!r}")
    if keras not in KERAS:
        raise ValueError(f"keras must be one of {KERAS}, not {keras!r}")
    if tensorboard and not log_dir:
        raise ValueError("tensorboard=True needs a log_dir to serve")
    reservation = _seconds(reservation_timeout)
    if reservation is None or not reservation > 0:
        raise ValueError(f"reservation_timeout must be a number of seconds > 0 (math.inf: no "
                         f"limit), not {_shown(reservation_timeout)}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an int >= 1, not {max_attempts!r}")
    heartbeat = _seconds(heartbeat_timeout)
    if heartbeat is None or not MIN_HEARTBEAT_TIMEOUT <= heartbeat < math.inf:
        raise ValueError(
            f"heartbeat_timeout must be a finite number of seconds >= "
            f"{MIN_HEARTBEAT_TIMEOUT:.0f}, not {_shown(heartbeat_timeout)}"
            + (": a node gone silent would never be lost, and an attempt that failed beside it "
               "would wait for it forever; give a long timeout instead (3600)"
               if heartbeat == math.inf else ""))
    if min_workers is not None and (
            isinstance(min_workers, bool) or not isinstance(min_workers, int)
            or not 1 <= min_workers <= num_workers):
        raise ValueError(f"min_workers must be an int from 1 to num_workers={num_workers}, "
                         f"not {min_workers!r}")
    env = _checked_env(env)
    if log_dir is not None:
        log_dir = os.fspath(log_dir)
        if not log_dir.strip():
            raise ValueError(f"log_dir must be a path or URL, or None, not {log_dir!r}")
        if not re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", log_dir):
            # A local path: absolute on the driver, since each node runs in a working
            # directory of its own, deleted when its task ends.
            log_dir = os.path.abspath(os.path.expanduser(log_dir))
    # Without a log_dir: a fresh path in the temporary directory, made only by a node that
    # saves there (usable when every node runs on one host).
    fallback = os.path.join(tempfile.gettempdir(), f"tfrecord-io-run-{uuid.uuid4().hex[:12]}")
    return RunOptions(
        mode=mode,
        num_workers=num_workers,
        log_dir=log_dir,
        checkpoint_dir=default_checkpoint_dir(log_dir, fallback),
        keras=keras,
        tensorboard=bool(tensorboard),
        reservation_timeout=reservation,
        max_attempts=max_attempts,
        env=env,
        input_mode=input_mode,
        heartbeat_timeout=heartbeat,
        min_workers=min_workers,
    )


def _seconds(value: Any) -> float | None:
    """*value* (a timeout) as a float; None when it is no number, or beyond a float's range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _shown(value: Any) -> str:
    """*value* in a message: its ``repr``, or what an int too large for a float is."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1024:
        return f"an int of {value.bit_length()} bits, beyond a float's range"
    return repr(value)


def _checked_env(env: Any) -> dict[str, str]:
    """*env* (``run(env=...)``) as a new dict, once every variable could reach the node
    processes as given: str names and values, names a process environment can hold, none of
    :data:`NODE_VARIABLES`. The values are never shown: they are often an object store's
    credentials.

    Raises:
        ValueError: a variable that could not, named (not its value) with why.
    """
    env = dict(env or {})
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"env must map str to str, not {type(key).__name__} to "
                             f"{type(value).__name__}"
                             + (f" (at {key!r})" if isinstance(key, str) else f" ({key!r})"))
        if not key or "=" in key or "\0" in key:
            raise ValueError(f"env has a variable named {key!r}, which no process environment "
                             "can hold: a name must be non-empty, without '=' or NUL characters")
        if "\0" in value:
            raise ValueError(f"env's value of {key!r} holds a NUL character, which no process "
                             "environment can hold")
    reserved = [key for key in NODE_VARIABLES if key in env]
    if len(reserved) == 1:
        (key,) = reserved
        raise ValueError(f"env may not set {key}: the cluster sets it in every node process "
                         f"itself, over env ({NODE_VARIABLES[key]}); remove it from env")
    if reserved:
        why = "; ".join(f"{key}: {NODE_VARIABLES[key]}" for key in reserved)
        raise ValueError(f"env may not set {', '.join(reserved)}: the cluster sets them in every "
                         f"node process itself, over env ({why}); remove them from env")
    return env


def default_checkpoint_dir(log_dir: str | None, fallback: str) -> str:
    """``LOG_DIR/checkpoints``, or *fallback* when there is no log_dir."""
    if log_dir:
        return log_dir.rstrip("/") + "/" + CHECKPOINT_SUBDIR
    return os.path.join(fallback, CHECKPOINT_SUBDIR)
