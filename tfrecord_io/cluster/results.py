"""What a cluster reports back to the driver: :class:`Result` (what ``Cluster.wait`` returns),
the metrics the nodes reported (:class:`Metrics`, a list of :class:`MetricRecord`), and the
encoding of ``main_fun``'s return value on its way from the node (:func:`encode_value`,
:func:`decode_value`).

A return value travels pickled (cloudpickle, as the function itself travelled), inside the
authenticated, encrypted control channel, from nodes the driver started; it is bounded by
:data:`MAX_VALUE_BYTES`. A metric is a number; its record says which node sent it, in which
attempt, at which step, and when.
"""

from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_VALUE_BYTES", "MetricRecord", "Metrics", "Resize", "Result", "decode_value",
           "encode_value", "metric_values", "step_value"]

#: Largest pickled return value of ``main_fun``.
MAX_VALUE_BYTES = 64 * 1024 * 1024


def encode_value(value: Any, node: str) -> bytes:
    """*value* (``main_fun``'s return value on *node*) pickled for the driver. Raises
    ValueError past :data:`MAX_VALUE_BYTES`, or if it cannot be pickled."""
    from pyspark import cloudpickle  # noqa: PLC0415 - pickles what the function's closure can

    try:
        data = cloudpickle.dumps(value)
    except Exception as e:
        raise ValueError(f"main_fun on {node} returned a {type(value).__name__} that cannot be "
                         f"pickled ({e}): return plain data (numbers, strings, lists, dicts, "
                         "numpy arrays)") from e
    if len(data) > MAX_VALUE_BYTES:
        raise ValueError(
            f"main_fun on {node} returned {len(data):,} bytes pickled, more than the "
            f"{MAX_VALUE_BYTES:,} a result may have: save large outputs to files (e.g. under "
            "ctx.checkpoint_dir or log_dir) and return their paths")
    return data


def decode_value(data: bytes) -> Any:
    """A return value made by :func:`encode_value`."""
    import pickle  # noqa: PLC0415 - from our own authenticated nodes

    return pickle.loads(data)


def _scalar(value: Any) -> Any:
    """*value* as a plain Python value when it is a TensorFlow or numpy scalar, else as is."""
    if hasattr(value, "numpy"):  # a TensorFlow tensor or variable
        value = value.numpy()
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:  # numpy scalar/array
        value = value.item()
    return value


def metric_values(metrics: dict[str, Any]) -> dict[str, float]:
    """*metrics* as plain floats (Python, numpy and TensorFlow scalars); NaN and the
    infinities are kept as they are (they reach the driver as such).

    Raises:
        TypeError: a value that is not one number.
        ValueError: a number beyond a float's range (an int such as ``10**400``), which no
            float could carry to the driver.
    """
    out = {}
    for name, value in metrics.items():
        value = _scalar(value)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"metric {name!r} must be a number, not {type(value).__name__}")
        try:
            out[str(name)] = float(value)
        except OverflowError:
            raise ValueError(
                f"metric {name!r} ({type(value).__name__}) is beyond a float's range "
                f"(±{sys.float_info.max:.4g}), and a float carries it to the driver: report a "
                "float (float('inf') or float('-inf') for an unbounded value)") from None
    return out


def step_value(step: Any) -> int | None:
    """The step of a report (``ctx.report(step=...)``) as an int: a Python, numpy or
    TensorFlow integer, or a number with no fractional part (``3.0``); None stays None.

    Raises:
        TypeError: *step* is not a number (a bool, a string, an array of several).
        ValueError: *step* has a fractional part, or is not finite: it would name another step.
    """
    if step is None:
        return None
    value = _scalar(step)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"step must be an int (the step or epoch of the report), or None, not "
                        f"{type(step).__name__}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if not math.isfinite(value) or not float(value).is_integer():
        raise ValueError(f"step must be a whole number (the step or epoch of the report), not "
                         f"{value!r}: pass the step or epoch counter itself, as an int")
    return int(value)


@dataclass(frozen=True)
class MetricRecord:
    """One ``ctx.report(...)`` of one node.

    Attributes:
        node: ``"worker:0"``, ``"chief:0"``, ...
        attempt: the attempt it came from (0 first).
        step: the step (or epoch) the node gave, or None.
        time: when the node reported it (``time.time()`` on the node).
        values: the metrics, by name.
    """

    node: str
    attempt: int
    step: int | None
    time: float
    values: dict[str, float]

    def __str__(self) -> str:
        shown = " ".join(f"{k}={_short(v)}" for k, v in self.values.items())
        at = f" step {self.step}" if self.step is not None else ""
        return f"[{self.node}]{at} {shown}"


def _short(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else str(value)


#: The columns of :meth:`Metrics.to_pandas` that come from the record, not from its metrics.
_RECORD_COLUMNS = ("node", "attempt", "step", "time")


class Metrics(list):  # type: ignore[type-arg]
    """The metrics the nodes reported, in the order the driver received them: a list of
    :class:`MetricRecord`."""

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame``, one row per record: columns ``node``, ``attempt``, ``step``,
        ``time`` (the record's) and one per metric name (NaN where a record lacks it). A metric
        named like one of the record's columns (``ctx.report(time=...)``) gets a column of its
        own, its name with ``_metric`` appended (``time_metric``; more, until no other column
        has the name): the record's columns are never overwritten. Needs pandas."""
        try:
            import pandas as pd  # noqa: PLC0415 - pandas, for to_pandas only
        except ImportError as e:
            raise ImportError("Metrics.to_pandas() needs pandas: pip install pandas") from e
        names = {name: name for r in self for name in r.values}
        taken = set(_RECORD_COLUMNS) | set(names)
        for name in names:
            if name in _RECORD_COLUMNS:
                column = f"{name}_metric"
                while column in taken:
                    column += "_metric"
                taken.add(column)
                names[name] = column
        rows = [{"node": r.node, "attempt": r.attempt, "step": r.step, "time": r.time,
                 **{names[k]: v for k, v in r.values.items()}} for r in self]
        return pd.DataFrame(rows, columns=None if rows else list(_RECORD_COLUMNS))

    def last(self, node: str | None = None) -> MetricRecord | None:
        """The latest record (of *node*), or None."""
        for record in reversed(self):
            if node is None or record.node == node:
                return record
        return None


@dataclass(frozen=True)
class Resize:
    """An attempt that started with another number of workers than the one before it
    (``cluster.run(min_workers=...)``).

    Attributes:
        attempt: the attempt that started at the new size (0 first: the first attempt, when
            it started with fewer than ``num_workers``).
        time: seconds from ``cluster.run`` to that attempt's start.
        before: the workers asked for (first attempt) or of the attempt before.
        after: the workers of this attempt.
        cause: why: the failure that ended the attempt before (its node, and the cause the
            cluster manager gave), or the slots the application lacked at the start.
    """

    attempt: int
    time: float
    before: int
    after: int
    cause: str


@dataclass
class Result:
    """What a finished cluster returns (``Cluster.wait()``).

    Attributes:
        chief: the chief's return value (``chief:0`` in ps mode, ``worker:0`` in sync mode).
        values: every node's return value by name (``"worker:1"``), nodes that run
            ``main_fun`` only.
        metrics: everything the nodes reported with ``ctx.report``, of every attempt.
        attempts: how many attempts it took (1: no failure).
        elapsed: seconds from ``cluster.run`` to the end.
        resizes: every attempt that started with another number of workers than the one
            before it (:class:`Resize`; ``min_workers``), in order.
    """

    chief: Any = None
    values: dict[str, Any] = field(default_factory=dict)
    metrics: Metrics = field(default_factory=Metrics)
    attempts: int = 1
    elapsed: float = 0.0
    resizes: list[Resize] = field(default_factory=list)
