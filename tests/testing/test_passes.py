"""tfrecord_io.testing.passes: how the benchmarks time their contenders."""

from __future__ import annotations

import gc
import os
import weakref

import pytest
import tensorflow as tf

from tfrecord_io.testing.passes import BATCH, Passes, interleaved, read_to_end


class Kept:
    """What a contender returns, to see when it is released."""


def test_contenders_run_once_to_warm_up_then_round_by_round_in_order():
    ran = []
    contenders = {name: (lambda name=name: ran.append(name)) for name in ("a", "b", "c")}
    passes = interleaved(contenders, 2)
    assert ran == ["a", "b", "c"] * 3
    assert {name: len(s) for name, s in passes.seconds.items()} == {"a": 2, "b": 2, "c": 2}
    assert {name: len(s) for name, s in passes.cpu.items()} == {"a": 2, "b": 2, "c": 2}


def test_what_a_contender_returns_is_released_before_the_next_one_runs():
    refs: list[weakref.ref] = []

    def make() -> Kept:
        kept = Kept()
        refs.append(weakref.ref(kept))
        return kept

    def check() -> None:
        gc.collect()
        assert all(ref() is None for ref in refs)

    interleaved({"make": make, "check": check}, 3)
    check()
    assert len(refs) == 4


def test_a_pass_counts_the_cpu_time_it_spends():
    def spin() -> None:
        deadline = os.times().user + 0.05
        while os.times().user < deadline:
            pass

    passes = interleaved({"spin": spin}, 1)
    assert passes.cpu["spin"][0] >= 0.04
    assert passes.seconds["spin"][0] >= 0.04


def test_each_pass_is_told_to_the_log():
    told: list[str] = []
    interleaved({"a": lambda: None}, 2, log=told.append)
    assert [line.split(":")[0] for line in told] == ["warm-up", "round 1", "round 2"]


def test_at_least_one_round_is_asked_for():
    with pytest.raises(ValueError, match="repeat"):
        interleaved({"a": lambda: None}, 0)


def test_medians_and_round_by_round_ratios():
    passes = Passes(seconds={"ref": [1.0, 2.0, 4.0], "other": [2.0, 2.0, 5.0]},
                    cpu={"ref": [0.5, 0.1, 0.3], "other": [1.0, 1.0, 1.0]})
    assert passes.median() == {"ref": 2.0, "other": 2.0}
    assert passes.median_cpu() == {"ref": 0.3, "other": 1.0}
    assert passes.paired("ref", "other") == [0.5, 0.8, 1.0]


def test_a_dataset_is_read_to_its_end_in_batches():
    n, batches = read_to_end(tf.data.Dataset.range(2 * BATCH + 7))
    assert n == 2 * BATCH + 7
    assert next(batches, None) is None  # at its end of sequence, not yet released


def test_a_count_other_than_the_one_expected_is_an_error():
    with pytest.raises(ValueError, match="read 5 records, 6 were expected"):
        read_to_end(tf.data.Dataset.range(5), expected=6)
