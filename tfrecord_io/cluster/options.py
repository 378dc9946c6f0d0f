"""What :func:`tfrecord_io.cluster.run` was asked for, checked once: :class:`RunOptions`."""

from __future__ import annotations

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
    "RunOptions",
    "default_checkpoint_dir",
    "run_options",
]

#: ``keras=``: Keras 3 (``"default"``) or tf-keras (``"legacy"``).
KERAS = ("default", "legacy")
#: ``input_mode=``: the nodes read their data themselves, or the driver feeds them.
INPUT_MODES = ("tensorflow", "spark")


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
    with the roles, by :func:`tfrecord_io.cluster.roles.roles`).

    Raises:
        ValueError: an option out of its range, named with what it accepts.
    """
    if input_mode not in INPUT_MODES:
        raise ValueError(f"input_mode must be one of {INPUT_MODES}, not {input_mode!r}")
    if keras not in KERAS:
        raise ValueError(f"keras must be one of {KERAS}, not {keras!r}")
    if tensorboard and not log_dir:
        raise ValueError("tensorboard=True needs a log_dir to serve")
    if (isinstance(reservation_timeout, bool)
            or not isinstance(reservation_timeout, (int, float)) or not reservation_timeout > 0):
        raise ValueError(f"reservation_timeout must be a number of seconds > 0, not "
                         f"{reservation_timeout!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an int >= 1, not {max_attempts!r}")
    if (isinstance(heartbeat_timeout, bool) or not isinstance(heartbeat_timeout, (int, float))
            or not heartbeat_timeout >= MIN_HEARTBEAT_TIMEOUT):
        raise ValueError(f"heartbeat_timeout must be a number of seconds >= "
                         f"{MIN_HEARTBEAT_TIMEOUT:.0f}, not {heartbeat_timeout!r}")
    if min_workers is not None and (
            isinstance(min_workers, bool) or not isinstance(min_workers, int)
            or not 1 <= min_workers <= num_workers):
        raise ValueError(f"min_workers must be an int from 1 to num_workers={num_workers}, "
                         f"not {min_workers!r}")
    env = dict(env or {})
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            # Types only: the values are often an object store's credentials.
            raise ValueError(f"env must map str to str, not {type(key).__name__} to "
                             f"{type(value).__name__}"
                             + (f" (at {key!r})" if isinstance(key, str) else ""))
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
        reservation_timeout=float(reservation_timeout),
        max_attempts=max_attempts,
        env=env,
        input_mode=input_mode,
        heartbeat_timeout=float(heartbeat_timeout),
        min_workers=min_workers,
    )


def default_checkpoint_dir(log_dir: str | None, fallback: str) -> str:
    """``LOG_DIR/checkpoints``, or *fallback* when there is no log_dir."""
    if log_dir:
        return log_dir.rstrip("/") + "/" + CHECKPOINT_SUBDIR
    return os.path.join(fallback, CHECKPOINT_SUBDIR)
