"""What a node sends stays within the control protocol's limits: a failure whose error or
traceback is huge reaches the driver as that failure, cut (not as a lost connection, which the
driver would take for a dead executor); a message over the limit is refused by its sender,
whose connection lives on. Loopback only, no Spark."""

from __future__ import annotations

import threading

import pytest

from tfrecord_io.cluster.channel import ControlServer, NodeConnection, control_key, new_secret
from tfrecord_io.cluster.messages import (
    MAX_ERROR,
    MAX_TRACEBACK,
    Done,
    FailureKind,
    Heartbeat,
    Hello,
    Log,
    Message,
)
from tfrecord_io.cluster.protocol import MAX_HEADER


class Driver:
    """The driver's side: every message after the hello, and every loss, as they come."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.lost: list[str] = []
        self.changed = threading.Condition()

    def on_message(self, hello: Hello, message: Message, payload: bytes) -> None:
        if isinstance(message, Hello):
            return
        with self.changed:
            self.messages.append(message)
            self.changed.notify_all()

    def on_lost(self, hello: Hello, reason: str) -> None:
        with self.changed:
            self.lost.append(reason)
            self.changed.notify_all()

    def wait_for(self, what, timeout: float = 10.0) -> None:
        with self.changed:
            assert self.changed.wait_for(what, timeout), "timed out"


@pytest.fixture
def link():
    """A control server and one node registered with it."""
    key = control_key(new_secret())
    driver = Driver()
    server = ControlServer("127.0.0.1", key, driver.on_message, driver.on_lost,
                           admit=lambda hello: None)
    node = NodeConnection(server.address, key, Hello(node="worker:0", attempt=0,
                                                     host="127.0.0.1", pid=1, gpus=[]))
    yield driver, node
    node.close()
    server.close()


def test_a_failure_with_a_huge_error_reaches_the_driver_cut_as_that_failure(link):
    driver, node = link
    error = "ValueError: " + "x" * 1_500_000
    node.send(Done(ok=False, kind=FailureKind.RAISED, error=error,
                   traceback="Traceback (most recent call last):\n" + "y" * 2_000_000 + "\nEND"))
    driver.wait_for(lambda: driver.messages or driver.lost)
    assert driver.lost == []
    [done] = driver.messages
    assert isinstance(done, Done) and done.kind is FailureKind.RAISED
    assert done.error.startswith("ValueError: xxx") and done.error.endswith(" ...[cut]")
    assert len(done.error) <= MAX_ERROR + len(" ...[cut]")
    assert done.traceback.startswith("...\n") and done.traceback.endswith("y\nEND")
    assert len(done.traceback) <= MAX_TRACEBACK + len("...\n")


def test_a_message_over_the_header_limit_is_refused_by_its_sender_and_the_link_lives_on(link):
    driver, node = link
    with pytest.raises(ValueError, match=f"'log' message with a .*-byte header: the protocol "
                                         f"allows {MAX_HEADER}"):
        node.send(Log(stream="stdout", line="z" * (MAX_HEADER + 1)))
    node.send(Heartbeat())
    driver.wait_for(lambda: driver.messages)
    assert driver.messages == [Heartbeat()] and driver.lost == []
