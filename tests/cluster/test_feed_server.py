"""A node's feed server and buffers, on real sockets: who may connect, what a batch must carry,
and the epoch rules readers see (no Spark, no TensorFlow)."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from tfrecord_io.cluster.channel import new_secret
from tfrecord_io.cluster.feed.batch_format import pack
from tfrecord_io.cluster.feed.buffer import FeedBuffer
from tfrecord_io.cluster.feed.server import FeedServer
from tfrecord_io.cluster.protocol import MAX_PAYLOAD, TAG_BYTES, connect
from tfrecord_io.errors import ChannelError, ClusterError


def framed(*records: bytes) -> bytes:
    return pack(records)


@pytest.fixture
def server():
    secret = new_secret()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    srv = FeedServer(listener, secret, name="worker:0", attempt=0, capacity=2)
    srv.secret = secret
    yield srv
    srv.close("finished")


def _feeder(server, secret=None, epoch=1):
    wire = connect(server.address, secret or server.secret,
                   {"type": "feeder", "feed": "train", "epoch": epoch, "attempt": 0},
                   server="worker:0")
    reply, _ = wire.receive(max_payload=0)
    return wire, reply


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True


def _epoch_in_thread(buf):
    out: dict = {}

    def read():
        try:
            out["records"] = [r for batch in buf.epoch() for r in batch.records()]
        except ClusterError as e:
            out["error"] = e

    thread = threading.Thread(target=read)
    thread.start()
    return thread, out


def test_a_feeder_with_the_cluster_secret_delivers_records_for_the_epoch(server):
    thread, out = _epoch_in_thread(server.buffer("train"))
    wire, reply = _feeder(server)
    assert reply == {"type": "ready"}
    wire.send({"type": "batch", "job": 0, "partition": 0, "seq": 0, "records": 2},
              framed(b"a", b"bc"))
    wire.send({"type": "end"})
    assert wire.receive(max_payload=0)[0] == {"type": "ack", "stopped": False}
    server.buffer("train").end_epoch(1, 2)
    thread.join(10)
    assert out == {"records": [b"a", b"bc"]}


def test_a_connection_with_a_wrong_secret_is_refused(server):
    with pytest.raises(ChannelError):
        _feeder(server, secret=new_secret())


def test_a_message_that_does_not_authenticate_closes_the_connection(server):
    wire, _ = _feeder(server)
    head = b'{"type":"batch","job":0,"partition":0,"seq":0,"records":1}'
    payload = framed(b"forged")
    wire.sock.sendall(
        struct.pack("!IQ", len(head), len(payload)) + head + payload + b"\0" * TAG_BYTES
    )
    assert _closed_by_peer(wire.sock)


def test_a_length_over_the_limit_is_refused_before_anything_is_allocated(server):
    wire, _ = _feeder(server)
    wire.sock.sendall(struct.pack("!IQ", 10, MAX_PAYLOAD + 1))
    assert _closed_by_peer(wire.sock)


def test_a_batch_sent_twice_by_a_retried_task_is_kept_once():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    for _ in range(2):
        assert buf.put(1, (0, 3, 0), 1, framed(b"once"))
    buf.end_epoch(1, 1)
    assert [r for batch in buf.epoch() for r in batch.records()] == [b"once"]


def test_each_iteration_is_the_next_epoch_and_an_early_exit_skips_the_rest_of_it():
    asked = []
    buf = FeedBuffer("train", 8, lambda name, epoch: asked.append(epoch))
    buf.put(1, (0, 0, 0), 1, framed(b"e1-a"))
    buf.put(1, (0, 0, 1), 1, framed(b"e1-b"))
    buf.end_epoch(1, 2)
    buf.put(2, (1, 0, 0), 1, framed(b"e2"))
    buf.end_epoch(2, 1)
    first = buf.epoch()
    assert next(first).records() == [b"e1-a"]  # and leave epoch 1 there
    assert [r for batch in buf.epoch() for r in batch.records()] == [b"e2"]
    assert asked == [1, 2]


def test_after_the_feed_ends_an_iteration_is_empty():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.close()
    assert list(buf.epoch()) == []
    assert list(buf.epoch()) == []


def test_a_stopped_feed_drops_what_comes_and_tells_the_sender():
    buf = FeedBuffer("train", 1, lambda name, epoch: None)
    assert buf.put(1, (0, 0, 0), 1, framed(b"kept until the stop"))
    buf.stop()
    assert not buf.put(1, (0, 0, 1), 1, framed(b"dropped"))
    assert list(buf.epoch()) == []


def test_a_full_buffer_holds_the_sender_until_the_reader_takes_a_batch():
    buf = FeedBuffer("train", 1, lambda name, epoch: None)
    buf.put(1, (0, 0, 0), 1, framed(b"first"))
    second = threading.Thread(target=buf.put, args=(1, (0, 0, 1), 1, framed(b"second")))
    second.start()
    second.join(1.0)
    assert second.is_alive()  # waiting: the buffer holds one batch
    epoch = buf.epoch()
    assert next(epoch).records() == [b"first"]
    second.join(10)
    assert not second.is_alive()
    buf.end_epoch(1, 2)
    assert [batch.records() for batch in epoch] == [[b"second"]]


def test_records_missing_at_the_end_of_an_epoch_raise():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.put(1, (0, 0, 0), 1, framed(b"only one"))
    buf.end_epoch(1, 2)
    with pytest.raises(ClusterError, match="1 records arrived on this node, but the driver sent 2"):
        list(buf.epoch())


def test_a_failed_epoch_raises_in_the_reader():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.fail_epoch(1, "the data changed")
    with pytest.raises(ClusterError, match="the data changed"):
        list(buf.epoch())


def test_a_batch_whose_lengths_run_past_its_end_raises_naming_the_batch_and_byte_offset():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    payload = struct.pack(">II", 1, 1_000_000) + b"a" + b"bc"  # record 1 claims 1,000,000 bytes
    buf.put(1, (4, 2, 5), 2, payload)
    buf.end_epoch(1, 2)
    with pytest.raises(ClusterError, match=r"feed 'train', epoch 1: a malformed batch \(feeding "
                                           r"job 4, partition 2, batch 5\) at byte offset 9"):
        list(buf.epoch())


def test_a_batch_too_short_for_its_lengths_table_raises_before_reading_it():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.put(1, (0, 0, 0), 1_000_000, b"\0" * 8)  # a million lengths announced, 8 bytes sent
    with pytest.raises(ClusterError, match="a table of 1000000 lengths needs 4000000 bytes, "
                                           "but the batch has 8"):
        list(buf.epoch())


def test_a_batch_of_the_next_epoch_waits_for_it_even_before_this_epochs_end_marker():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.put(1, (0, 0, 0), 1, pack([b"one"]))
    buf.put(2, (1, 0, 0), 1, pack([b"two"]))  # fed ahead, before epoch 1's end marker came
    buf.end_epoch(1, 1)
    buf.end_epoch(2, 1)
    assert [r for batch in buf.epoch() for r in batch.records()] == [b"one"]
    assert [r for batch in buf.epoch() for r in batch.records()] == [b"two"]


def test_batches_fed_ahead_never_keep_out_a_batch_of_the_epoch_being_read():
    asked = threading.Event()
    buf = FeedBuffer("train", 1, lambda name, epoch: asked.set())
    reader, out = _epoch_in_thread(buf)
    assert asked.wait(10)  # the reader is in epoch 1
    buf.put(2, (1, 0, 0), 1, framed(b"ahead"))  # the next epoch's job already runs
    more_ahead = threading.Thread(target=buf.put, args=(2, (1, 0, 1), 1, framed(b"more")))
    more_ahead.start()
    more_ahead.join(1.0)
    assert more_ahead.is_alive()  # batches fed ahead are bounded: one here
    assert buf.put(1, (0, 0, 0), 1, framed(b"now"))  # taken at once, although the buffer is full
    buf.end_epoch(1, 1)
    reader.join(10)
    assert out == {"records": [b"now"]}
    assert more_ahead.is_alive()
    second = buf.epoch()
    assert next(second).records() == [b"ahead"]
    more_ahead.join(10)
    assert not more_ahead.is_alive()
    buf.end_epoch(2, 2)
    assert [batch.records() for batch in second] == [[b"more"]]


def _driver_link(server):
    return connect(server.address, server.secret, {"type": "driver", "attempt": 0},
                   server="worker:0")


def test_a_reader_raises_when_the_drivers_link_ends_before_its_epoch(server):
    link = _driver_link(server)
    thread, out = _epoch_in_thread(server.buffer("train"))
    assert link.receive(max_payload=0)[0] == {"type": "demand", "feed": "train", "epoch": 1}
    wire, _ = _feeder(server)
    wire.send({"type": "batch", "job": 0, "partition": 0, "seq": 0, "records": 1}, framed(b"a"))
    wire.send({"type": "end"})
    assert wire.receive(max_payload=0)[0] == {"type": "ack", "stopped": False}
    link.close()  # no end marker can come now
    thread.join(10)
    assert not thread.is_alive()
    assert "the driver's link to this node ended" in str(out["error"])
    assert "feed 'train', epoch 1" in str(out["error"])


def test_after_the_feeds_end_the_drivers_link_may_close(server):
    link = _driver_link(server)
    link.send({"type": "end_all"})
    thread, out = _epoch_in_thread(server.buffer("train"))
    thread.join(10)
    link.close()
    assert out == {"records": []}
    thread, out = _epoch_in_thread(server.buffer("validation"))
    thread.join(10)
    assert out == {"records": []}


def test_stopping_every_feed_stops_a_feed_first_used_later_and_tells_the_driver(server):
    link = _driver_link(server)
    server.buffer("train")
    server.stop()
    assert link.receive(max_payload=0)[0] == {"type": "reader_left", "feed": "train"}
    later = server.buffer("validation")
    assert later.stopped
    assert link.receive(max_payload=0)[0] == {"type": "reader_left", "feed": "validation"}
    wire = connect(server.address, server.secret,
                   {"type": "feeder", "feed": "validation", "epoch": 1, "attempt": 0},
                   server="worker:0")
    assert wire.receive(max_payload=0)[0] == {"type": "stopped"}


def test_a_retried_tasks_batch_is_dropped_at_once_even_when_the_buffer_is_full():
    buf = FeedBuffer("train", 1, lambda name, epoch: None)
    assert buf.put(1, (0, 0, 0), 1, framed(b"a"))  # the buffer is full now
    done = threading.Event()

    def again():
        buf.put(1, (0, 0, 0), 1, framed(b"a"))  # the same batch, from a retried task
        done.set()

    threading.Thread(target=again, daemon=True).start()
    assert done.wait(5), "the repeat waited for room it would not take"


def test_a_retried_tasks_batch_still_on_its_way_in_is_read_before_the_epoch_ends():
    buf = FeedBuffer("train", 1, lambda name, epoch: None)
    assert buf.put(1, (0, 0, 0), 1, framed(b"a"))  # the buffer is full now
    # The task's first attempt waits for room with its batch; then its executor is lost.
    first = threading.Thread(target=buf.put, args=(1, (0, 1, 0), 1, framed(b"b")), daemon=True)
    first.start()
    deadline = time.monotonic() + 10
    while (0, 1, 0) not in buf._seen.get(1, ()):  # the first attempt is waiting for room
        assert time.monotonic() < deadline
        time.sleep(0.001)
    acked = threading.Event()

    def retried():
        buf.put(1, (0, 1, 0), 1, framed(b"b"))  # the same batch, from the retried task
        acked.set()  # its connection is acknowledged: the driver ends the epoch
        buf.end_epoch(1, 2)

    threading.Thread(target=retried, daemon=True).start()
    assert not acked.wait(0.5), "acknowledged before its batch was in"
    assert [r for batch in buf.epoch() for r in batch.records()] == [b"a", b"b"]
    first.join(10)
    assert acked.is_set()


def test_an_epoch_left_early_drops_the_rest_of_its_batches_without_holding_the_sender():
    buf = FeedBuffer("train", 1, lambda name, epoch: None)
    assert buf.put(1, (0, 0, 0), 1, framed(b"a"))
    first = buf.epoch()
    assert next(first).records() == [b"a"]
    assert buf.put(1, (0, 0, 1), 1, framed(b"b"))  # the buffer is full now
    held = threading.Thread(target=buf.put, args=(1, (0, 0, 2), 1, framed(b"c")), daemon=True)
    held.start()
    first.close()  # the reader leaves epoch 1 (say for another feed) and reads no more of it
    held.join(5)
    assert not held.is_alive(), "a feeder of the epoch left early is held until the next one"
    assert not buf.put(1, (0, 0, 3), 1, framed(b"d"))  # dropped at once: the sender is told
    assert buf.put(2, (0, 0, 0), 1, framed(b"next"))
    buf.end_epoch(1, 4)
    buf.end_epoch(2, 1)
    assert [r for batch in buf.epoch() for r in batch.records()] == [b"next"]


def _read_epoch(buf) -> list[bytes]:
    return [r for batch in buf.epoch() for r in batch.records()]


def test_a_withdrawn_epoch_drops_its_batches_and_reads_the_next_calls_instead():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.put(1, (1, 0, 0), 1, framed(b"call-1"))
    buf.end_epoch(1, 1)
    buf.put(2, (1, 0, 0), 1, framed(b"ahead"))  # epoch 2 of call 1, fed ahead
    assert _read_epoch(buf) == [b"call-1"]
    assert buf.withdraw(2, 1)
    buf.put(2, (2, 0, 0), 1, framed(b"call-2"))  # the next call's epoch 2
    buf.end_epoch(2, 1)  # counted: the withdrawn batch is not in the count either
    assert _read_epoch(buf) == [b"call-2"]


def test_a_withdrawn_epochs_batch_that_comes_late_is_dropped_and_its_sender_told():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    assert buf.withdraw(1, 1)
    assert not buf.put(1, (1, 0, 0), 1, framed(b"stale"))  # its cancelled task, still sending
    assert buf.put(1, (2, 0, 0), 1, framed(b"fresh"))
    buf.end_epoch(1, 1)
    assert _read_epoch(buf) == [b"fresh"]


def test_a_withdrawn_batch_waiting_for_room_gives_up_and_frees_its_sender():
    buf = FeedBuffer("train", 1, lambda name, epoch: None)
    buf.put(1, (1, 0, 0), 1, framed(b"held"))
    kept: list[bool] = []
    sender = threading.Thread(target=lambda: kept.append(buf.put(1, (1, 0, 1), 1, framed(b"x"))))
    sender.start()
    sender.join(0.3)
    assert sender.is_alive()  # the buffer is full: it waits
    assert buf.withdraw(1, 1)
    sender.join(10)
    assert kept == [False]


def test_an_epoch_the_reader_has_begun_is_not_withdrawn():
    buf = FeedBuffer("train", 8, lambda name, epoch: None)
    buf.put(1, (1, 0, 0), 1, framed(b"begun"))
    reading = buf.epoch()
    assert next(reading).records() == [b"begun"]
    assert not buf.withdraw(1, 1)
    buf.end_epoch(1, None)  # the driver ends it short instead
    assert list(reading) == []


def test_the_server_answers_a_withdrawal_on_the_drivers_link(server):
    link = _driver_link(server)
    wire, _ = _feeder(server, epoch=1)
    wire.send({"type": "batch", "job": 7, "partition": 0, "seq": 0, "records": 1}, framed(b"a"))
    wire.send({"type": "end"})
    assert wire.receive(max_payload=0)[0] == {"type": "ack", "stopped": False}
    link.send({"type": "withdraw_epoch", "feed": "train", "epoch": 1, "job": 7})
    assert link.receive(max_payload=0)[0] == {
        "type": "withdrawn", "feed": "train", "epoch": 1, "job": 7, "withdrawn": True}
    thread, out = _epoch_in_thread(server.buffer("train"))
    assert link.receive(max_payload=0)[0] == {"type": "demand", "feed": "train", "epoch": 1}
    link.send({"type": "withdraw_epoch", "feed": "train", "epoch": 1, "job": 8})
    assert link.receive(max_payload=0)[0] == {
        "type": "withdrawn", "feed": "train", "epoch": 1, "job": 8, "withdrawn": False}
    link.send({"type": "end_epoch", "feed": "train", "epoch": 1, "sent": 0})
    thread.join(10)
    assert out == {"records": []}
