"""A worker that a feeding task could not reach is never lost silently: the epoch fails naming
the worker, its feed server, the feeding task's host and the cause, unless the worker's node
said on its link that ``main_fun`` ended (then the rest of its data is the documented drop).
The schedule with small fakes and a fake clock; no Spark, no threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tfrecord_io.cluster.feed.reports import Feeding
from tfrecord_io.cluster.feed.schedule import UNREACHED_GRACE, Call, FeedSchedule
from tfrecord_io.errors import ClusterError


@dataclass
class DoneJob:
    value: Any
    error: BaseException | None = None

    def done(self) -> bool:
        return True

    def cancel(self) -> None:
        pass


@dataclass
class Plan:
    per_worker: int | None = None
    dropped: int = 0


class Runner:
    def __init__(self, report: dict[str, Any]) -> None:
        self.report = report

    def plan(self, call: Call) -> DoneJob:
        return DoneJob(Plan())

    def send_epoch(self, call: Call, epoch: int) -> DoneJob:
        return DoneJob([self.report])

    def stream(self, call: Call, epoch: int, result: Any) -> DoneJob:
        raise AssertionError("no streams here")

    def release(self, call: Call) -> None:
        pass


class Links:
    def __init__(self) -> None:
        self.nodes = ["worker:0", "worker:1"]
        self.left: dict[str, str] = {}
        self.sent: list[tuple[str, Any]] = []

    def readers(self, feed: str) -> list[str]:
        return [n for n in self.nodes if n not in self.left]

    def asked(self, node: str, feed: str) -> int:
        return 1

    def gone(self, node: str) -> str | None:
        return self.left.get(node)

    def awaited_elsewhere(self, feed: str, done: dict[str, int]) -> bool:
        return False

    def awaited(self, node: str) -> dict[str, int]:
        return {}

    def send(self, node: str, message: Any) -> None:
        self.sent.append((node, message))


def _task(state_of_1: str) -> dict[str, Any]:
    return {"host": "executor-host-7", "pid": 1, "workers": {
        "0": {"records": 10, "batches": 1, "dropped": 0, "state": "ready",
              "address": "198.18.0.11:4000"},
        "1": {"records": 4, "batches": 1, "dropped": 6, "state": state_of_1,
              "address": "198.18.0.12:4000", "cause": "Connection refused"},
    }}


def _run(links: Links, report: dict[str, Any], steps: list[float]) -> Feeding:
    now = [0.0]
    schedule = FeedSchedule(links, Runner(report), equal=False, failure=lambda: None,
                            clock=lambda: now[0])
    feeding = Feeding()
    schedule.add(Call("train", object(), 1, feeding))
    for t in steps:
        now[0] = t
        schedule.step()
    return feeding


def test_an_unreached_worker_that_still_reads_fails_the_epoch_naming_it():
    feeding = _run(Links(), _task("unreachable"), [0.0, 1.0, UNREACHED_GRACE + 0.5])
    with pytest.raises(ClusterError) as failed:
        feeding.result(timeout=0)
    text = str(failed.value)
    assert failed.value.node == "worker:1"
    for part in ("worker:1", "198.18.0.12:4000", "executor-host-7", "Connection refused",
                 "epoch 1"):
        assert part in text


def test_the_epoch_waits_for_the_link_within_the_grace_before_failing():
    feeding = _run(Links(), _task("unreachable"), [0.0, UNREACHED_GRACE - 0.5])
    assert not feeding.done()


def test_an_unreached_worker_whose_main_fun_finished_is_the_documented_drop():
    links = Links()
    links.left["worker:1"] = "finished"
    feeding = _run(links, _task("unreachable"), [0.0])
    report = feeding.result(timeout=0)
    assert report.epochs[0].records == {0: 10, 1: 4}
    assert report.epochs[0].dropped == 6


def test_a_worker_whose_link_says_it_finished_during_the_grace_is_a_drop_too():
    links = Links()
    now = [0.0]
    schedule = FeedSchedule(links, Runner(_task("unreachable")), equal=False,
                            failure=lambda: None, clock=lambda: now[0])
    feeding = Feeding()
    schedule.add(Call("train", object(), 1, feeding))
    schedule.step()
    assert not feeding.done()
    links.left["worker:1"] = "finished"
    now[0] = 1.0
    schedule.step()
    assert feeding.result(timeout=0).epochs[0].dropped == 6


def test_a_stopped_worker_is_no_loss():
    feeding = _run(Links(), _task("stopped"), [0.0])
    assert feeding.result(timeout=0).epochs[0].dropped == 6


def test_a_worker_that_read_nothing_for_the_idle_timeout_fails_the_epoch_saying_so_and_how_long():
    # The feeding task was connected, and the worker's buffer stayed full (its reader busy
    # between epochs) for the jar's idle timeout: not "could not reach", nor a firewall.
    report = _task("unreachable")
    report["workers"]["1"].update(
        idle=600.0, cause="the feed server at 198.18.0.12:4000: it took no byte of a 'batch' "
        "message for 600 s: its worker read no batch of this feed for 600 s while its buffer "
        "was full")
    feeding = _run(Links(), report, [0.0, UNREACHED_GRACE + 0.5])
    with pytest.raises(ClusterError) as failed:
        feeding.result(timeout=0)
    text = str(failed.value)
    assert failed.value.node == "worker:1"
    assert text.startswith("feeding epoch 1 of feed 'train' gave up on worker:1 (worker 1, feed "
                           "server 198.18.0.12:4000) from the feeding task on executor-host-7")
    assert "its worker read no batch of this feed for 600 s" in text
    assert "reads no batch for 600 s" in text and "spark.tfrecordio.feed.idleTimeout" in text
    assert "could not reach" not in text and "firewall" not in text
