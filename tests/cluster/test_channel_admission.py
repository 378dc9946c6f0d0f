"""The control server admits a registration only from a node of the attempt running now, once:
a stale attempt's hello and a duplicate are refused and logged, and the live node's connection
is untouched. A feeding task's key opens no control connection. Loopback only, no Spark."""

from __future__ import annotations

import logging
import threading

import pytest

from tfrecord_io.cluster.channel import (
    ControlServer,
    NodeConnection,
    control_key,
    feed_key,
    new_secret,
)
from tfrecord_io.cluster.messages import Heartbeat, Hello, Message, Stop
from tfrecord_io.errors import ChannelError

from waiting import eventually


class Driver:
    """What the driver does with the server: admit attempt 1's worker:0 and worker:1."""

    def __init__(self) -> None:
        self.attempt = 1
        self.messages: list[tuple[str, int, str]] = []
        self.lost: list[tuple[str, int]] = []
        self.changed = threading.Condition()

    def admit(self, hello: Hello) -> str | None:
        if hello.attempt != self.attempt:
            return f"{hello.node} is of attempt {hello.attempt}, not {self.attempt}"
        if hello.node not in ("worker:0", "worker:1"):
            return f"{hello.node!r} is not a node of this cluster"
        return None

    def on_message(self, hello: Hello, message: Message, payload: bytes) -> None:
        with self.changed:
            self.messages.append((hello.node, hello.attempt, message.TYPE))
            self.changed.notify_all()

    def on_lost(self, hello: Hello, reason: str) -> None:
        with self.changed:
            self.lost.append((hello.node, hello.attempt))
            self.changed.notify_all()

    def wait_for(self, what, timeout: float = 10.0) -> None:
        with self.changed:
            assert self.changed.wait_for(what, timeout), "timed out"



@pytest.fixture
def secret():
    return new_secret()


@pytest.fixture
def driver(secret):
    d = Driver()
    server = ControlServer("127.0.0.1", control_key(secret), d.on_message, d.on_lost,
                           admit=d.admit)
    d.server = server
    yield d
    server.close()


def _hello(node: str, attempt: int) -> Hello:
    return Hello(node=node, attempt=attempt, host="127.0.0.1", pid=1, gpus=[])


def _refused(connection: NodeConnection) -> bool:
    try:
        connection.receive()
    except ChannelError:
        return True
    return False


def test_a_registered_node_is_heard(driver, secret):
    node = NodeConnection(driver.server.address, control_key(secret), _hello("worker:0", 1))
    node.send(Heartbeat())
    driver.wait_for(lambda: ("worker:0", 1, "heartbeat") in driver.messages)
    node.close()


def test_a_stale_attempts_hello_is_refused_and_the_live_node_untouched(driver, secret, caplog):
    live = NodeConnection(driver.server.address, control_key(secret), _hello("worker:0", 1))
    driver.wait_for(lambda: ("worker:0", 1, "hello") in driver.messages)
    with caplog.at_level(logging.WARNING):
        stale = NodeConnection(driver.server.address, control_key(secret), _hello("worker:0", 0))
        assert _refused(stale)
        # the server logs and counts the refusal just after the stale peer saw its connection
        # end; it logs first, so once it is counted the line is there
        eventually(lambda: driver.server.refused == 1, timeout=10, what="one refusal counted")
    assert "attempt 0" in caplog.text and "refused" in caplog.text
    assert driver.lost == []
    assert driver.server.send("worker:0", 1, Stop())  # the live connection still works
    assert isinstance(live.receive(), Stop)
    live.close()


def test_a_duplicate_registration_is_refused_and_the_first_kept(driver, secret):
    first = NodeConnection(driver.server.address, control_key(secret), _hello("worker:1", 1))
    driver.wait_for(lambda: ("worker:1", 1, "hello") in driver.messages)
    second = NodeConnection(driver.server.address, control_key(secret), _hello("worker:1", 1))
    assert _refused(second)
    assert driver.server.connected() == [("worker:1", 1)]
    first.send(Heartbeat())
    driver.wait_for(lambda: ("worker:1", 1, "heartbeat") in driver.messages)
    assert driver.lost == []
    first.close()


def test_a_name_that_is_no_node_is_refused(driver, secret):
    stranger = NodeConnection(driver.server.address, control_key(secret), _hello("chief:7", 1))
    assert _refused(stranger)
    assert driver.messages == []


def test_the_feed_key_opens_no_control_connection(driver, secret):
    feeder = NodeConnection(driver.server.address, feed_key(secret), _hello("worker:0", 1))
    assert _refused(feeder)
    # counted just after the peer saw it
    eventually(lambda: driver.server.refused == 1, timeout=10, what="one refusal counted")
    assert driver.messages == []


def test_a_message_the_protocol_does_not_allow_ends_only_that_connection(driver, secret):
    node = NodeConnection(driver.server.address, control_key(secret), _hello("worker:0", 1))
    other = NodeConnection(driver.server.address, control_key(secret), _hello("worker:1", 1))
    driver.wait_for(lambda: len(driver.messages) == 2)
    node.send(Stop())  # the driver's message, never a task's
    driver.wait_for(lambda: ("worker:0", 1) in driver.lost)
    other.send(Heartbeat())
    driver.wait_for(lambda: ("worker:1", 1, "heartbeat") in driver.messages)
    assert ("worker:1", 1) not in driver.lost
    node.close()
    other.close()


def test_a_node_the_driver_gives_up_on_is_disconnected_and_its_reader_ends(driver, secret):
    node = NodeConnection(driver.server.address, control_key(secret), _hello("worker:0", 1))
    driver.wait_for(lambda: ("worker:0", 1) in driver.server.connected())
    readers = threading.active_count()
    assert driver.server.disconnect("worker:0", 1)
    driver.wait_for(lambda: driver.lost == [("worker:0", 1)])
    assert driver.server.connected() == []
    assert _refused(node)  # the node sees its connection end
    eventually(lambda: threading.active_count() < readers, timeout=10, every=0.01,
               what=lambda: f"{threading.active_count()} threads, {readers} before")
    assert not driver.server.disconnect("worker:0", 1)  # not connected any more
    node.close()
