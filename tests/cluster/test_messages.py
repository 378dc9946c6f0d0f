"""The protocol's messages are typed in one module: each type round-trips through its header,
a receiver refuses a type it does not expect, a missing, unknown or mistyped field, and the
message tables of docs/protocol.md list exactly the module's types and fields."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

import pytest

from tfrecord_io.cluster import messages
from tfrecord_io.cluster.messages import (
    MAX_ERROR,
    MAX_TRACEBACK,
    Batch,
    Done,
    FailEpoch,
    FailureKind,
    FeederHello,
    Grow,
    Hello,
    Report,
    encode,
    parse,
)
from tfrecord_io.cluster.protocol import MAX_HEADER
from tfrecord_io.errors import ChannelError

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
_ROW = re.compile(r"^\| `(?P<type>[a-z_]+)` \| [^|]+ \| (?P<fields>[^|]+)\|")
_FIELD = re.compile(r"`([a-z_]+)`")
_ASIDE = re.compile(r"\([^()]*\)")


def _documented() -> dict[str, set[str]]:
    text = DOCS.read_text(encoding="utf-8")
    tables = text[text.index("## Control channel messages"):]
    rows: dict[str, set[str]] = {}
    for line in tables.splitlines():
        m = _ROW.match(line)
        if m:
            fields = m.group("fields")
            while _ASIDE.search(fields):  # what parentheses say about a field is no field
                fields = _ASIDE.sub("", fields)
            rows[m.group("type")] = set(_FIELD.findall(fields))
    return rows


def test_the_docs_message_tables_list_exactly_the_modules_types_and_fields():
    documented = _documented()
    typed = {cls.TYPE: {f.name for f in dataclasses.fields(cls)} for cls in messages.ALL}
    assert documented == typed


def test_every_type_is_unique_where_it_may_arrive():
    for expected in (messages.CONTROL_HELLOS, messages.FROM_NODE_TASK, messages.FROM_DRIVER,
                     messages.FEED_HELLOS, messages.FROM_DRIVER_LINK, messages.FROM_FEED_SERVER,
                     messages.FROM_FEEDER, messages.TO_FEEDER):
        types = [c.TYPE for c in expected]
        assert len(types) == len(set(types))
    assert len({c.TYPE for c in messages.ALL}) == len(messages.ALL)


@pytest.mark.parametrize("message", [
    Hello(node="worker:0", attempt=1, host="198.18.0.11", pid=42, gpus=["0"], task=7,
          container="container_1_0001_01_000002", feed_server="198.18.0.11:4000"),
    Hello(node="chief:0", attempt=0, host="h", pid=1, gpus=[]),
    Done(ok=False, kind=FailureKind.KILLED, error="the node process was killed by SIGKILL (9)"),
    Done(ok=True, stopped=True),
    Done(ok=True, resized=True),
    Grow(workers=3),
    Report(step=None, time=1.5, attempt=0, values={"loss": 0.25, "données": 1.0}),
    FeederHello(feed="données-ü", epoch=3, attempt=2),
    Batch(job=0, partition=3, seq=7, records=2),
], ids=lambda m: type(m).__name__)
def test_a_message_round_trips_through_its_header(message):
    assert parse(encode(message), messages.ALL) == message


def test_optional_fields_left_out_of_the_header_when_unset():
    assert encode(Hello(node="worker:0", attempt=0, host="h", pid=1, gpus=[])) == {
        "type": "hello", "node": "worker:0", "attempt": 0, "host": "h", "pid": 1, "gpus": []}


def test_a_type_not_expected_on_this_connection_is_refused():
    with pytest.raises(ChannelError, match="'done' message where only 'stop', 'grow' may come"):
        parse({"type": "done", "ok": True}, messages.FROM_DRIVER)


def test_an_unknown_field_is_refused():
    with pytest.raises(ChannelError, match="unknown fields extra"):
        parse({"type": "heartbeat", "extra": 1}, messages.FROM_NODE_TASK)


def test_a_missing_field_is_refused():
    with pytest.raises(ChannelError, match="without its 'attempt'"):
        parse({"type": "feeder", "feed": "train", "epoch": 1}, messages.FEED_HELLOS)


@pytest.mark.parametrize("header", [
    {"type": "hello", "node": 1, "attempt": 0, "host": "h", "pid": 1, "gpus": []},
    {"type": "hello", "node": "w", "attempt": True, "host": "h", "pid": 1, "gpus": []},
    {"type": "hello", "node": "w", "attempt": 0, "host": "h", "pid": 1, "gpus": [3]},
    {"type": "batch", "job": 0, "partition": 0, "seq": 0, "records": "2"},
    {"type": "report", "step": None, "time": 0, "attempt": 0, "values": {"loss": "low"}},
    {"type": "done", "ok": False, "kind": "mysterious"},
], ids=["str-as-int", "bool-as-int", "list-of-int", "int-as-str", "metric-as-str", "kind"])
def test_a_field_of_the_wrong_type_is_refused(header):
    with pytest.raises(ChannelError, match="malformed"):
        parse(header, messages.ALL)


def test_failures_rank_by_kind_a_dead_or_silent_node_before_an_exception():
    dead = {FailureKind.KILLED, FailureKind.SILENT, FailureKind.LOST, FailureKind.EXITED}
    assert {k.rank for k in dead} == {0}
    assert FailureKind.RAISED.rank == 1
    assert FailureKind.SPARK_JOB.rank == 2


def test_a_failures_error_is_cut_to_its_start_and_its_traceback_to_its_end():
    done = Done(ok=False, kind=FailureKind.RAISED, error="E" + "e" * 2 * MAX_ERROR,
                traceback="T" + "t" * 2 * MAX_TRACEBACK + "raised here")
    assert done.error == "E" + "e" * (MAX_ERROR - 1) + " ...[cut]"
    assert done.traceback == "...\n" + ("t" * 2 * MAX_TRACEBACK + "raised here")[-MAX_TRACEBACK:]
    assert parse(encode(done), messages.ALL) == done  # cut once: the same after the wire


def test_a_failed_epochs_reason_is_cut_to_its_start_so_that_its_marker_can_be_sent():
    marker = FailEpoch(feed="f", epoch=3, reason="R" + "r" * (2 * MAX_HEADER))
    assert marker.reason == "R" + "r" * (MAX_ERROR - 1) + " ...[cut]"
    assert len(json.dumps(encode(marker))) < MAX_HEADER
    assert parse(encode(marker), messages.ALL) == marker


def test_a_failures_short_error_and_traceback_are_kept_whole():
    done = Done(ok=False, kind=FailureKind.RAISED, error="e" * MAX_ERROR,
                traceback="t" * MAX_TRACEBACK)
    assert (done.error, done.traceback) == ("e" * MAX_ERROR, "t" * MAX_TRACEBACK)
