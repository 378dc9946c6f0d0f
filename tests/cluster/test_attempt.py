"""An attempt's registration (tfrecord_io.cluster.attempt) against a real control server on
loopback, without Spark: the application is a stand-in that answers for its task slots."""

from __future__ import annotations

import socket

import pytest

from tfrecord_io.cluster.attempt import Attempt
from tfrecord_io.cluster.channel import ControlServer, control_key, new_secret
from tfrecord_io.cluster.description import AttemptDescription
from tfrecord_io.cluster.options import run_options
from tfrecord_io.cluster.roles import roles
from tfrecord_io.errors import ClusterError

from waiting import eventually


class Application:
    """What the attempt asks of its Spark application here: its free task slots."""

    def free_slots(self) -> int:
        return 3


@pytest.fixture
def attempt():
    key = control_key(new_secret())
    box: dict[str, Attempt] = {}
    server = ControlServer("127.0.0.1", key, lambda h, m, p: box["a"].on_message(h, m, p),
                           lambda h, reason: box["a"].on_lost(h.node, reason),
                           admit=lambda h: box["a"].admit(h))
    options = run_options(mode="sync", num_workers=1, log_dir=None, keras="default",
                          tensorboard=False, reservation_timeout=10, max_attempts=1, env={},
                          input_mode="tensorflow")
    description = AttemptDescription(options, cluster="c", driver=server.address,
                                      control_key=key, feed_key="f", number=0, num_workers=1)
    box["a"] = Attempt(application=Application(), roles=roles("sync", 1, 0, False),
                       description=description, payload=b"", group="g", server=server)
    yield box["a"], server
    server.close()


def test_a_registration_that_times_out_counts_the_connections_refused_since_it_began(
        attempt):
    attempt, server = attempt
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as stranger:
        stranger.sendall(b"GET / HTTP/1.1\r\nHost: driver\r\n\r\n" * 4)  # another protocol
        eventually(lambda: server.refused == 1, timeout=10, every=0.01,
                   what=lambda: f"{server.refused} refused")
        with pytest.raises(ClusterError) as failed:
            attempt.wait_registered(0.5)
    assert str(failed.value).startswith("only 0 of 1 nodes registered within 0 s (missing: ")
    assert str(failed.value).endswith(
        "the application has 3 task slots now, other jobs may be holding them; the control "
        "server refused 1 connection(s) since the attempt began (logged at WARNING with their "
        "peers)")
