"""A node described once, as typed values from the driver to the node process.

:class:`AttemptDescription` is what every node of one attempt shares: made on the driver for
each attempt around the checked options (:class:`~tfrecord_io.cluster.options.RunOptions`,
held, not copied), it travels to the Spark tasks inside the task closure.
:class:`NodeDescription` is one node: its Spark task makes it once it knows the cluster's
addresses, writes it to the node's working directory (:data:`DESCRIPTION_FILE`, JSON), and the
node process reads it once and builds its :class:`~tfrecord_io.cluster.context.NodeContext`
from it.
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
    """What every node of one attempt shares: the checked options of the run, and what names
    this attempt.

    Attributes:
        options: the run's checked options (mode, workers, log and checkpoint directories,
            Keras, TensorBoard, the nodes' extra environment, input mode, ...); read through,
            never copied.
        cluster: the cluster's name (its node processes' working directories carry it).
        driver: the control channel's ``host:port``.
        control_key: the control channel's key (the node's Spark task registers with it).
        feed_key: the feed's key (the node's feed server accepts it); neither key is the
            cluster's secret, and neither shows in the ``repr``.
        number: 0 on the first try, then 1, 2...
        num_workers: the workers of this attempt: ``options.num_workers``, or fewer (not
            under ``options.min_workers``) when the application could not place them all.
    """

    options: RunOptions
    cluster: str
    driver: str
    control_key: str = field(repr=False)
    feed_key: str = field(repr=False)
    number: int
    num_workers: int

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AttemptDescription:
        """The description whose :func:`dataclasses.asdict` is *data*."""
        return cls(options=RunOptions(**data.pop("options")), **data)


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
        return cls(attempt=AttemptDescription.from_dict(data.pop("attempt")),
                   role=Role(**data.pop("role")), **data)
