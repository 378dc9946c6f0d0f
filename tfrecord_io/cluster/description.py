"""A node described once, as typed values from the driver to the node process.

:class:`AttemptDescription` is what every node of one attempt shares: made once on the driver
from the checked options (:class:`~tfrecord_io.cluster.options.RunOptions`), it travels to the
Spark tasks inside the task closure. :class:`NodeDescription` is one node: its Spark task makes
it once it knows the cluster's addresses, writes it to the node's working directory
(:data:`DESCRIPTION_FILE`, JSON), and the node process reads it once and builds its
:class:`~tfrecord_io.cluster.context.NodeContext` from it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

from tfrecord_io.cluster.options import RunOptions
from tfrecord_io.cluster.roles import Role

__all__ = ["DESCRIPTION_FILE", "AttemptDescription", "NodeDescription"]

#: The node's description in its working directory.
DESCRIPTION_FILE = "node.json"


@dataclass(frozen=True)
class AttemptDescription:
    """What every node of one attempt shares.

    Attributes:
        cluster: the cluster's name (its node processes' working directories carry it).
        driver: the control channel's ``host:port``.
        control_key: the control channel's key (the node's Spark task registers with it).
        feed_key: the feed's key (the node's feed server accepts it); neither key is the
            cluster's secret, and neither shows in the ``repr``.
        attempt: 0 on the first try, then 1, 2...
        mode: ``"sync"`` or ``"ps"``.
        num_workers: workers in the cluster.
        log_dir: the log directory, or None.
        checkpoint_dir: where checkpoints go.
        keras: ``"default"`` or ``"legacy"``.
        tensorboard: whether the chief's task serves TensorBoard.
        env: extra environment variables of every node process (not in the ``repr``: they
            may hold an object store's credentials).
        input_mode: ``"tensorflow"`` or ``"spark"`` (fed nodes serve a feed).
    """

    cluster: str
    driver: str
    control_key: str = field(repr=False)
    feed_key: str = field(repr=False)
    attempt: int
    mode: str
    num_workers: int
    log_dir: str | None
    checkpoint_dir: str
    keras: str
    tensorboard: bool
    env: dict[str, str] = field(repr=False)
    input_mode: str

    @classmethod
    def of(cls, options: RunOptions, *, cluster: str, driver: str, control_key: str,
           feed_key: str, attempt: int) -> AttemptDescription:
        """Attempt *attempt* of cluster *cluster* run with *options*."""
        return cls(cluster=cluster, driver=driver, control_key=control_key, feed_key=feed_key,
                   attempt=attempt,
                   mode=options.mode, num_workers=options.num_workers, log_dir=options.log_dir,
                   checkpoint_dir=options.checkpoint_dir, keras=options.keras,
                   tensorboard=options.tensorboard, env=dict(options.env),
                   input_mode=options.input_mode)


@dataclass(frozen=True)
class NodeDescription:
    """One node of one attempt, as its process needs it.

    Attributes:
        attempt: what every node of the attempt shares.
        role: the node's role.
        cluster_spec: the training cluster, ``{"worker": ["host:port", ...], ...}``.
        tf_config: the node's ``TF_CONFIG``.
        host: the address of the node's executor (its servers bind it).
        parent_pid: the Spark task's process (the node dies with it).
        feed_fd: the file descriptor of the feed server's socket the task bound, or None.
        port_fd: the file descriptor of the socket that holds the node's TensorFlow port
            (bound, not listening) until TensorFlow is about to bind it, or None.
    """

    attempt: AttemptDescription
    role: Role
    cluster_spec: dict[str, list[str]]
    tf_config: dict[str, Any]
    host: str
    parent_pid: int
    feed_fd: int | None = None
    port_fd: int | None = None

    def write(self, directory: str) -> None:
        """Write the description to *directory*'s :data:`DESCRIPTION_FILE` (owner only: it
        holds the feed's key)."""
        path = os.path.join(directory, DESCRIPTION_FILE)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                  encoding="utf-8") as f:
            json.dump(dataclasses.asdict(self), f)

    @classmethod
    def read(cls, directory: str) -> NodeDescription:
        """The description :meth:`write` wrote to *directory*."""
        with open(os.path.join(directory, DESCRIPTION_FILE), encoding="utf-8") as f:
            data = json.load(f)
        return cls(attempt=AttemptDescription(**data.pop("attempt")), role=Role(**data.pop("role")),
                   **data)
