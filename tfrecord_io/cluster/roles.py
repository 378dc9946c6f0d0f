"""The roles of a cluster's nodes and the ``TF_CONFIG`` each of them gets.

A cluster is a list of :class:`Role` in a fixed order; Spark barrier task *i* plays role *i*.

* ``"sync"`` (``MultiWorkerMirroredStrategy``): ``worker:0`` .. ``worker:N-1``, all running
  ``main_fun``; worker 0 is the chief. The cluster spec holds the workers only.
* ``"ps"`` (``ParameterServerStrategy``): ``chief:0`` (the coordinator, running ``main_fun``),
  ``ps:0`` .. ``ps:P-1`` and ``worker:0`` .. ``worker:N-1`` (bare ``tf.distribute.Server``\\ s).

``evaluator=True`` appends ``evaluator:0``, which runs ``main_fun`` too. The evaluator is not part
of the training cluster spec that the strategies see (TensorFlow's rule), but it gets a
``TF_CONFIG`` naming itself so ``TFConfigClusterResolver`` works there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["MODES", "Role", "roles", "cluster_spec", "tf_config"]

MODES = ("sync", "ps")


@dataclass(frozen=True)
class Role:
    """What one node is.

    Attributes:
        job_name: ``"chief"``, ``"worker"``, ``"ps"`` or ``"evaluator"``.
        task_index: its index within the job.
        runs_main: whether it runs ``main_fun`` (else it serves a bare ``tf.distribute.Server``
            until the cluster stops).
        is_chief: the one node that saves checkpoints and summaries: ``chief:0`` in ps mode,
            ``worker:0`` in sync mode.
    """

    job_name: str
    task_index: int
    runs_main: bool
    is_chief: bool

    @property
    def fed(self) -> bool:
        """Whether the node reads the cluster's feeds (``input_mode="spark"``): a node that
        runs ``main_fun`` in the training cluster (not the evaluator)."""
        return self.runs_main and self.job_name != "evaluator"

    @property
    def name(self) -> str:
        """``job:index``, e.g. ``worker:1``: how logs and errors name the node."""
        return f"{self.job_name}:{self.task_index}"


def _count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, not {value!r}")
    return value


def roles(mode: str, num_workers: int, num_ps: int = 0, evaluator: bool = False) -> list[Role]:
    """The roles of a cluster, in barrier task order.

    Raises:
        ValueError: an unknown mode, or counts that do not fit it (ps mode needs
            ``num_ps >= 1``; sync mode takes no ps).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    _count("num_workers", num_workers, 1)
    _count("num_ps", num_ps, 0)
    if mode == "sync":
        if num_ps:
            raise ValueError(
                f"mode='sync' has no parameter servers (num_ps={num_ps}): use mode='ps'"
            )
        out = [Role("worker", i, True, i == 0) for i in range(num_workers)]
    else:
        if num_ps < 1:
            raise ValueError("mode='ps' needs num_ps >= 1 parameter server")
        out = [Role("chief", 0, True, True)]
        out += [Role("ps", i, False, False) for i in range(num_ps)]
        out += [Role("worker", i, False, False) for i in range(num_workers)]
    if evaluator:
        out.append(Role("evaluator", 0, True, False))
    return out


def cluster_spec(all_roles: list[Role], addresses: list[str]) -> dict[str, list[str]]:
    """The training cluster spec (``{"worker": ["host:port", ...], ...}``): every role but the
    evaluator, each job's addresses in task index order."""
    spec: dict[str, list[str]] = {}
    for role, address in zip(all_roles, addresses, strict=True):
        if role.job_name != "evaluator":
            spec.setdefault(role.job_name, []).append(address)
    return spec


def tf_config(spec: dict[str, list[str]], role: Role) -> dict[str, Any]:
    """The ``TF_CONFIG`` of *role* in a cluster of *spec*."""
    return {"cluster": spec, "task": {"type": role.job_name, "index": role.task_index}}
