"""A boundary of main_fun: it returns at once unless the attempt can grow and the driver left
the grow file; then it saves the checkpoint and raises ResizeInterrupt. (Workers agreeing
through an all-reduce, and the driver's side, run for real in test_cluster_growth.py.)"""

from __future__ import annotations

import pytest

from tfrecord_io.cluster.growth import GROW_FILE, Boundary
from tfrecord_io.errors import ResizeInterrupt


def _unused_strategy():
    raise AssertionError("no all-reduce was due")


def test_an_attempt_that_cannot_grow_passes_its_boundaries_even_with_the_file(tmp_path):
    (tmp_path / GROW_FILE).write_text("3")
    boundary = Boundary(str(tmp_path), can_grow=False, agree=True)
    assert not boundary.pending()
    boundary.reach(_unused_strategy, save=lambda: pytest.fail("saved"))


def test_without_the_grow_file_a_boundary_returns_at_once(tmp_path):
    boundary = Boundary(str(tmp_path), can_grow=True, agree=False)
    assert not boundary.pending()
    boundary.reach(_unused_strategy, save=lambda: pytest.fail("saved"))


def test_with_the_grow_file_a_boundary_saves_then_leaves_main_fun(tmp_path):
    saved = []
    boundary = Boundary(str(tmp_path), can_grow=True, agree=False)
    (tmp_path / GROW_FILE).write_text("3")
    assert boundary.pending()
    with pytest.raises(ResizeInterrupt):
        boundary.reach(_unused_strategy, save=lambda: saved.append(True))
    assert saved == [True]


def test_the_interrupt_passes_through_except_exception():
    with pytest.raises(ResizeInterrupt):
        try:
            raise ResizeInterrupt("grow")
        except Exception:  # noqa: BLE001 - what user code often does
            pytest.fail("caught by except Exception")


def test_agreeing_on_one_replica_follows_its_own_flag(tmp_path):
    import tensorflow as tf
    boundary = Boundary(str(tmp_path), can_grow=True, agree=True)
    boundary.reach(tf.distribute.get_strategy)  # no file: stays
    (tmp_path / GROW_FILE).write_text("3")
    with pytest.raises(ResizeInterrupt):
        boundary.reach(tf.distribute.get_strategy)


def test_the_tasks_announcement_is_what_a_boundary_sees(tmp_path):
    from tfrecord_io.cluster.growth import announce

    boundary = Boundary(str(tmp_path), can_grow=True, agree=False)
    announce(str(tmp_path), 3)
    assert boundary.pending()
    assert (tmp_path / GROW_FILE).read_text() == "3"
    assert [p.name for p in tmp_path.iterdir()] == [GROW_FILE]  # no temporary file left
