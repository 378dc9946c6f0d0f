"""Timed passes for the benchmarks: contenders interleaved round by round, and a TensorFlow
dataset read to its end of sequence the way a training loop reads it.

Interleaving makes background load and the machine's drift hurt every contender alike; the
per-pass figures are kept, so that a benchmark can give the median and compare pass by pass.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tfrecord_io.testing.processes import cpu_seconds

__all__ = ["Passes", "interleaved", "read_to_end"]

#: Records per batch of :func:`read_to_end`.
BATCH = 1024


@dataclasses.dataclass(frozen=True)
class Passes:
    """Each contender's passes, in the order they ran: wall seconds, and CPU seconds of this
    process plus the process the caller named (a storage server's)."""

    seconds: dict[str, list[float]]
    cpu: dict[str, list[float]]

    def median(self) -> dict[str, float]:
        """Each contender's median wall seconds."""
        return {name: statistics.median(values) for name, values in self.seconds.items()}

    def median_cpu(self) -> dict[str, float]:
        """Each contender's median CPU seconds."""
        return {name: statistics.median(values) for name, values in self.cpu.items()}

    def paired(self, reference: str, other: str) -> list[float]:
        """Sorted, round by round: *reference*'s seconds over *other*'s in the same round (how
        fast *other* is against the reference, with the drift between rounds cancelled)."""
        rounds = zip(self.seconds[reference], self.seconds[other], strict=True)
        return sorted(ref / seconds for ref, seconds in rounds)


def interleaved(contenders: Mapping[str, Callable[[], object]], repeat: int, *,
                pid: int | None = None,
                log: Callable[[str], None] | None = None) -> Passes:
    """Runs each contender once untimed (a warm-up), then *repeat* rounds of all of them in
    the same order, timing each pass. What a contender returns is released after its clock
    stops (a TensorFlow iterator: see :func:`read_to_end`). *pid*: a process whose CPU time
    counts too; *log*: told of each pass."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    for name, run in contenders.items():
        run()
        if log is not None:
            log(f"warm-up: {name}")
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for r in range(repeat):
        for name, run in contenders.items():
            c, s, t = time.process_time(), cpu_seconds(pid), time.perf_counter()
            kept = run()
            seconds[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c + cpu_seconds(pid) - s)
            del kept
            if log is not None:
                log(f"round {r + 1}: {name}: {seconds[name][-1]:.3f} s, "
                    f"{cpu[name][-1]:.3f} CPU s")
    return Passes(seconds, cpu)


def read_to_end(dataset: Any, expected: int | None = None) -> tuple[int, Iterator[Any]]:
    """Iterates ``dataset.batch(BATCH)`` in Python to its end of sequence, as a training loop
    would. Returns the records counted and the iterator, for the caller to release after its
    clock stops: with tf.data's autotuning on, an iterator's teardown sometimes waits for the
    tuning thread to wake (it sleeps 10 ms, then twice as long each time), whatever the
    source, so a pass that ended at 0.4 s would be counted as 0.63 s. ``ValueError`` when
    *expected* is given and the count differs."""
    batches = iter(dataset.batch(BATCH))
    n = sum(int(batch.shape[0]) for batch in batches)
    if expected is not None and n != expected:
        raise ValueError(f"read {n} records, {expected} were expected")
    return n, batches
