"""The cluster's servers under hostile peers, on loopback: random bytes, frames cut short,
oversized lengths, replayed and reflected frames, keys of another purpose or bound to another
server, handshakes dribbled a byte at a time, floods past the handshake cap and to the end of
the file descriptors, a thread that cannot be started, ``accept()`` failing.

Each test runs against real servers on 127.0.0.1: a control-like
:class:`~tfrecord_io.cluster.protocol.StreamServer` (named ``driver``, under the control key)
and a real :class:`~tfrecord_io.cluster.feed.server.FeedServer` (``worker:0``, under the feed
key), and asserts that a legitimate client (the right key) is still served during or after the
abuse, that the process's threads and resident memory stay bounded, and that no exception
escaped (none reached ``threading.excepthook``, nothing logged at ERROR). Every test is seeded
(the seed is in its id; ``TFRECORD_IO_HOSTILE_SEED`` adds one), bounded in connections and time.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import pathlib
import random
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
import types

import pytest

from tfrecord_io.cluster import protocol
from tfrecord_io.cluster.feed.server import FeedServer
from tfrecord_io.cluster.protocol import (
    CONTROL,
    FEED,
    MAGIC,
    MAX_HANDSHAKES,
    MAX_HEADER,
    MAX_HELLO,
    MAX_PAYLOAD,
    NONCE_BYTES,
    PREFIX_BYTES,
    TO_CLIENT,
    TO_SERVER,
    Stream,
    StreamServer,
    connect,
    derive_key,
    purpose_key,
    seal,
)
from tfrecord_io.errors import ChannelError

from waiting import eventually

SECRET = "5ec2e7" * 10 + "abcd"
KEYS = {CONTROL: purpose_key(SECRET, CONTROL), FEED: purpose_key(SECRET, FEED)}
GREETING = len(MAGIC) + NONCE_BYTES
HERE = pathlib.Path(__file__).resolve().parent

_EXTRA = [int(os.environ["TFRECORD_IO_HOSTILE_SEED"])] if os.environ.get(
    "TFRECORD_IO_HOSTILE_SEED") else []
#: Seeds of the fuzzing tests (two each), and of the others (one).
FUZZ_SEEDS = [pytest.param(s, id=f"seed={s}") for s in [11, 12, *_EXTRA]]
SEEDS = [pytest.param(s, id=f"seed={s}") for s in [21, *_EXTRA]]

#: Threads the process may have beyond its own before a test: the event loop, and a serving
#: thread or two of a legitimate client that has not ended yet.
THREAD_ALLOWANCE = 4
#: Resident memory a test may add, in MiB (a thread or a buffer per connection would show).
RSS_ALLOWANCE_MIB = 48


def _rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Guard:
    """What every test checks: bounded threads and memory, no escaped exception."""

    def __init__(self, caplog) -> None:
        self.caplog = caplog
        self.escaped: list = []
        self.threads = threading.active_count()
        self.rss = _rss_mib()
        self.most_threads = self.threads
        self.most_rss = self.rss

    def sample(self) -> None:
        """Note the process's threads and memory now (during the abuse)."""
        self.most_threads = max(self.most_threads, threading.active_count())
        self.most_rss = max(self.most_rss, _rss_mib())

    def refusals(self) -> list[str]:
        return [r.getMessage() for r in self.caplog.records
                if "refused a connection" in r.getMessage()]

    def verify(self) -> None:
        self.sample()
        assert not self.escaped, f"exceptions escaped into threads: {self.escaped}"
        errors = [r.getMessage() for r in self.caplog.records if r.levelno >= logging.ERROR]
        assert not errors, errors
        assert self.most_threads <= self.threads + THREAD_ALLOWANCE, (
            f"{self.most_threads} threads, {self.threads} before")
        assert self.most_rss - self.rss < RSS_ALLOWANCE_MIB, (
            f"{self.most_rss:.0f} MiB resident, {self.rss:.0f} MiB before")


@pytest.fixture
def guard(caplog, monkeypatch):
    caplog.set_level(logging.WARNING)
    g = Guard(caplog)
    monkeypatch.setattr(
        threading,
        "excepthook",
        lambda args: g.escaped.append(f"{args.exc_type.__name__}: {args.exc_value}"),
    )
    yield g
    g.verify()


def _control_serve(stream: Stream, hello: dict) -> None:
    stream.send({"type": "welcome", "node": hello["node"]})
    while True:
        stream.receive(max_payload=0)


def _control_welcome(hello: dict) -> str | None:
    if hello["type"] == "hello" and isinstance(hello.get("node"), str):
        return None
    return f"an unexpected first message {hello['type']!r}"


class Target:
    """A server under attack, and what a legitimate client of it does."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        if kind == "control":
            self.key, self.name = KEYS[CONTROL], "driver"
            self.hello = {"type": "hello", "node": "worker:0", "attempt": 0}
            self.stream_server = StreamServer(listener, self.key, _control_serve,
                                              _control_welcome, name="hostile control",
                                              server=self.name)
            self._close = self.stream_server.close
        else:
            self.key, self.name = KEYS[FEED], "worker:0"
            self.hello = {"type": "feeder", "feed": "train", "epoch": 1, "attempt": 0}
            feed = FeedServer(listener, self.key, name=self.name, attempt=0, capacity=4)
            self.stream_server = feed._server
            self._close = lambda: (feed.close("finished"), self.stream_server.close())
        self.address = self.stream_server.address
        self.host, self.port = self.address.rsplit(":", 1)

    def legit(self, timeout: float = 10.0) -> float:
        """A legitimate client's whole exchange; asserts it is served, returns its seconds."""
        started = time.monotonic()
        wire = connect(self.address, self.key, self.hello, timeout, server=self.name)
        wire.sock.settimeout(timeout)
        try:
            if self.kind == "control":
                assert wire.receive(max_payload=0)[0] == {"type": "welcome", "node": "worker:0"}
            else:
                assert wire.receive(max_payload=0)[0] == {"type": "ready"}
                wire.send({"type": "end"})
                assert wire.receive(max_payload=0)[0] == {"type": "ack", "stopped": False}
        finally:
            wire.close()
        return time.monotonic() - started

    def raw(self) -> socket.socket:
        return socket.create_connection((self.host, int(self.port)), timeout=10)

    def close(self) -> None:
        self._close()


@pytest.fixture(params=["control", "feed"])
def target(request, guard):
    t = Target(request.param)
    assert t.stream_server.accepting
    yield t
    assert t.stream_server.accepting, "the event loop died"
    t.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes *sock* within *seconds* (what it sent before is skipped)."""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def _refused(server: StreamServer, count: int, last: str = "") -> None:
    """Until *server* has counted *count* refused connections (it counts a refusal just after
    the peer saw its connection end); *last* says what the last one was."""
    __tracebackhide__ = True
    eventually(lambda: server.refused == count, timeout=10, every=0.005,
               what=lambda: f"{server.refused} refusals counted, not {count} {last}".rstrip())


class Session:
    """A hand-made client session over a raw socket: the handshake with chosen keys, then frames
    sealed by hand (to record, cut, replay or reflect)."""

    def __init__(self, target: Target, rng: random.Random, *, key: str | None = None,
                 server: str | None = None, hello: dict | None = None) -> None:
        self.sock = target.raw()
        self.server_greeting = _recv_exactly(self.sock, GREETING)
        server_nonce = self.server_greeting[len(MAGIC):]
        self.client_nonce = rng.randbytes(NONCE_BYTES)
        key, server = key or target.key, server or target.name
        self.send_key = derive_key(key, server_nonce, self.client_nonce, TO_SERVER, server)
        self.receive_key = derive_key(key, server_nonce, self.client_nonce, TO_CLIENT, server)
        self.sent = 0
        hello_frame = self.frame(json.dumps(hello or target.hello).encode())
        self.opening = MAGIC + self.client_nonce + hello_frame

    def frame(self, header: bytes, payload: bytes = b"") -> bytes:
        frame = bytes(seal(self.send_key, self.sent, header, payload))
        self.sent += 1
        return frame

    def open(self) -> None:
        self.sock.sendall(self.opening)

    def read_frame(self) -> bytes:
        prefix = _recv_exactly(self.sock, PREFIX_BYTES)
        head, payload = struct.unpack(">IQ", prefix)
        return prefix + _recv_exactly(self.sock, head + payload + 16)


# -- noise ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_random_bytes_are_refused_and_a_legitimate_client_is_served(seed, target, guard):
    rng = random.Random(seed)
    attacks = 30
    for i in range(attacks):
        shape = rng.choice(["noise", "magic", "prefix"])
        if shape == "noise":
            data = rng.randbytes(rng.randint(1, 400))
        elif shape == "magic":
            data = MAGIC + rng.randbytes(NONCE_BYTES + rng.randint(0, 400))
        else:  # a plausible hello's length, then noise where its ciphertext should be
            data = (MAGIC + rng.randbytes(NONCE_BYTES)
                    + struct.pack(">IQ", rng.randint(0, MAX_HELLO), 0)
                    + rng.randbytes(rng.randint(0, MAX_HELLO + 64)))
        sock = target.raw()
        with contextlib.suppress(OSError):  # (the server may have closed it already)
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)  # (a peer that holds on is the dribbling test's)
        assert _closed_within(sock, 5), f"attack {i} ({shape}) was not refused"
        sock.close()
        if i % 10 == 9:
            target.legit()
            guard.sample()
    _refused(target.stream_server, attacks)
    assert 20 <= len(guard.refusals()) < attacks  # logged one by one up to the rate limit


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_frames_cut_short_are_refused_before_and_after_the_hello(seed, target, guard, monkeypatch):
    monkeypatch.setattr(protocol, "HANDSHAKE_TIMEOUT", 1.0)
    rng = random.Random(seed)
    for _ in range(6):  # the opening cut anywhere, then the end of the connection
        session = Session(target, rng)
        with contextlib.suppress(OSError):
            session.sock.sendall(session.opening[: rng.randrange(len(session.opening))])
            session.sock.shutdown(socket.SHUT_WR)
        assert _closed_within(session.sock, 5)
        session.sock.close()
    held = []
    for _ in range(3):  # the opening cut anywhere, the connection held: cut at the deadline
        session = Session(target, rng)
        session.sock.sendall(session.opening[: rng.randrange(len(session.opening))])
        held.append(session)
    target.legit()
    assert all(_closed_within(s.sock, 3) for s in held)
    _refused(target.stream_server, 9)
    # a client that authenticated sends a frame cut short: its connection only ends
    session = Session(target, rng)
    session.open()
    session.read_frame()  # welcome / ready
    frame = session.frame(b'{"type":"end"}')
    session.sock.sendall(frame[: rng.randrange(1, len(frame))])
    session.sock.shutdown(socket.SHUT_WR)
    assert _closed_within(session.sock, 5)
    target.legit()
    assert any("cut short" in r.getMessage() for r in guard.caplog.records)


@pytest.mark.parametrize("seed", SEEDS)
def test_oversized_lengths_are_refused_at_once_without_allocating(seed, target, guard):
    rng = random.Random(seed)
    over = [(MAX_HELLO + 1, 0), (0xFFFFFFFF, (1 << 64) - 1), (rng.randint(0, MAX_HELLO), 1),
            (rng.randint(MAX_HELLO + 1, 0xFFFFFFFF), rng.randint(0, (1 << 64) - 1))]
    for lengths in over:  # as the hello: refused at its prefix, not at the deadline
        sock = target.raw()
        _recv_exactly(sock, GREETING)
        sock.sendall(MAGIC + rng.randbytes(NONCE_BYTES) + struct.pack(">IQ", *lengths))
        assert _closed_within(sock, 3.0), lengths  # (the deadline is 10 s)
        sock.close()
        guard.sample()
    limit = MAX_PAYLOAD if target.kind == "feed" else 0
    for lengths in [(MAX_HEADER + 1, 0), (10, limit + 1), (0xFFFFFFFF, (1 << 64) - 1)]:
        session = Session(target, rng)  # after the hello, the receiver's own limits
        session.open()
        session.read_frame()
        session.sock.sendall(struct.pack(">IQ", *lengths))
        assert _closed_within(session.sock, 3.0), lengths
        guard.sample()
    target.legit()
    assert target.stream_server.refused == len(over)


# -- other keys, replays, reflections ------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_replayed_and_reflected_frames_and_foreign_keys_are_refused(seed, target, guard):
    rng = random.Random(seed)
    refused = 0

    def refused_now(session: Session, what: str) -> None:
        nonlocal refused
        session.open()
        assert _closed_within(session.sock, 5), what
        session.sock.close()
        refused += 1
        _refused(target.stream_server, refused, last=f"(the last: {what})")

    # a legitimate session, recorded
    recorded = Session(target, rng)
    recorded.open()
    reply = recorded.read_frame()
    follow_up = recorded.frame(b'{"type":"heartbeat"}')
    # replayed on a new connection (whose server nonce is another): nothing decrypts
    replay = Session(target, rng)
    replay.opening = recorded.opening + follow_up
    refused_now(replay, "a replayed session")
    # the server's greeting sent back as the client's, with a hello as the server would seal it
    mirror = Session(target, rng)
    mirror_key = derive_key(target.key, mirror.server_greeting[len(MAGIC):],
                            mirror.server_greeting[len(MAGIC):], TO_CLIENT, target.name)
    mirror.opening = mirror.server_greeting + bytes(
        seal(mirror_key, 0, json.dumps(target.hello).encode()))
    refused_now(mirror, "a reflected handshake")
    # the server's reply of the recorded session, as another connection's hello
    echo = Session(target, rng)
    echo.opening = MAGIC + echo.client_nonce + reply
    refused_now(echo, "a reflected reply")
    # the right purpose key bound to another server's name (a relay swapping two nodes' links)
    refused_now(Session(target, rng, server="worker:1" if target.name == "driver" else "driver"),
                "a client bound to another server")
    # the other purpose's key: a feeder's key opens no control connection, and back
    other = KEYS[FEED] if target.key == KEYS[CONTROL] else KEYS[CONTROL]
    refused_now(Session(target, rng, key=other), "the other purpose's key")
    # the cluster's secret itself (it never leaves the driver): not a purpose key
    refused_now(Session(target, rng, key=SECRET), "the secret as a key")
    if target.kind == "feed":  # a stale feeding task, of another attempt
        refused_now(Session(target, rng, hello={**target.hello, "attempt": 1}), "a stale feeder")
        assert any("attempt 1, but worker:0 is of attempt 0" in m for m in guard.refusals())
    # the recorded session, still open, gets its own reply reflected: that connection ends
    recorded.sock.sendall(reply)
    assert _closed_within(recorded.sock, 5)
    target.legit()
    assert len(guard.refusals()) == refused


# -- slow peers and floods -----------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_handshakes_dribbled_a_byte_at_a_time_are_cut_at_the_total_deadline(
        seed, target, guard, monkeypatch):
    deadline, every = 1.2, 0.3  # (10 s and 0.6 s in life: a byte before any per-read timeout)
    monkeypatch.setattr(protocol, "HANDSHAKE_TIMEOUT", deadline)
    rng = random.Random(seed)
    dribblers = {}
    for _ in range(6):
        sock = target.raw()
        sock.setblocking(False)
        dribblers[sock] = (time.monotonic(), MAGIC + rng.randbytes(200))
    cut: dict[socket.socket, float] = {}
    served_during = False
    sent = 0
    started = time.monotonic()
    while len(cut) < len(dribblers) and time.monotonic() - started < deadline + 3:
        for sock, (opened, data) in dribblers.items():
            if sock in cut:
                continue
            try:
                while sock.recv(4096):  # the greeting; b"" when closed
                    pass
                cut[sock] = time.monotonic() - opened
                continue
            except BlockingIOError:
                pass
            except ConnectionResetError:
                cut[sock] = time.monotonic() - opened
                continue
            try:
                sock.send(data[sent: sent + 1])
            except OSError:
                cut[sock] = time.monotonic() - opened
        sent += 1
        if not served_during and time.monotonic() - started > every:
            eventually(lambda: target.stream_server.handshaking == len(dribblers), timeout=1,
                       every=0.005, what="every dribbler holds a handshake slot")
            target.legit()  # served while every dribbler holds its slot
            served_during = True
            guard.sample()
        time.sleep(every)
    assert served_during and len(cut) == len(dribblers), "dribblers not cut"
    assert all(deadline - 0.05 < t < deadline + every + 1.5 for t in cut.values()), cut
    assert sent >= 3  # they did send, steadily (a byte within any per-read timeout)
    for sock in dribblers:
        sock.close()
    assert target.stream_server.refused == len(dribblers)
    assert all("no authenticated hello within 1.2 s" in m for m in guard.refusals())
    target.legit()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_flood_past_the_handshake_cap_holds_no_more_and_a_client_is_served_during_it(
        seed, target, guard):
    rng = random.Random(seed)
    flood = []
    for _ in range(3 * MAX_HANDSHAKES):
        sock = target.raw()
        if rng.random() < 0.5:  # half of them start a handshake
            sock.sendall(MAGIC + rng.randbytes(rng.randint(1, NONCE_BYTES)))
        flood.append(sock)
    server = target.stream_server
    eventually(lambda: server.refused >= len(flood) - MAX_HANDSHAKES, timeout=10, every=0.005,
               what=lambda: f"{server.refused} of the flood's {len(flood)} connections refused")
    assert server.handshaking <= MAX_HANDSHAKES
    guard.sample()
    target.legit(timeout=5)  # served during the flood: the oldest handshake makes room
    assert server.handshaking <= MAX_HANDSHAKES
    assert len(guard.refusals()) <= 21  # rate-limited: 20 one by one, then a count
    guard.sample()
    for sock in flood:
        sock.close()
    eventually(lambda: server.handshaking == 0, timeout=10, every=0.005,
               what=lambda: f"{server.handshaking} handshakes still held")
    target.legit()


class SteppedSelector:
    """The event loop's selector, one turn of the loop at a time: each ``select`` waits until
    the test allows a turn (:meth:`step`), and reports the listener's event before the others,
    the order in which an accept once dropped handshakes whose hello was waiting."""

    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self._turns = threading.Semaphore(0)
        self._arrived = threading.Condition()
        self.arrivals = 0
        self.free = False

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def select(self, timeout=None):
        with self._arrived:
            self.arrivals += 1
            self._arrived.notify_all()
        if not self.free:
            self._turns.acquire()
        events = self._real.select(timeout)
        return sorted(events, key=lambda event: event[0].data != "listen")

    def step(self) -> None:
        """Let the loop make one turn, and wait until it has."""
        with self._arrived:
            assert self._arrived.wait_for(lambda: self.arrivals > 0, timeout=10)
            arrived = self.arrivals
        self._turns.release()
        with self._arrived:
            assert self._arrived.wait_for(lambda: self.arrivals > arrived, timeout=10), (
                "the event loop did not come back to select")

    def run_freely(self) -> None:
        self.free = True
        self._turns.release()


def test_an_accept_never_drops_a_handshake_whose_hello_is_waiting(guard, monkeypatch):
    stepped = SteppedSelector()
    monkeypatch.setattr(protocol.selectors, "DefaultSelector", lambda: stepped)
    served: list[dict] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = StreamServer(listener, KEYS[CONTROL], lambda stream, hello: served.append(hello),
                          _control_welcome, name="stepped control", server="driver")
    host, port = server.address.rsplit(":", 1)
    target = types.SimpleNamespace(
        key=KEYS[CONTROL], name="driver", hello={"type": "hello", "node": "worker:0"},
        raw=lambda: socket.create_connection((host, int(port)), timeout=10))
    idle: list[socket.socket] = []
    sessions: list[Session] = []
    try:
        idle += [target.raw() for _ in range(MAX_HANDSHAKES - 1)]
        stepped.step()
        assert server.handshaking == MAX_HANDSHAKES - 1
        greeted = threading.Thread(target=lambda: sessions.append(
            Session(target, random.Random(5))))
        greeted.start()
        stepped.step()  # accepts it (the table is full now) and greets it
        greeted.join(10)
        assert server.handshaking == MAX_HANDSHAKES and sessions
        sessions[0].open()  # its hello waits in the server's socket
        idle += [target.raw() for _ in range(MAX_HANDSHAKES + 8)]  # the listener is ready too
        stepped.step()
        assert served == [target.hello]
        assert server.handshaking == MAX_HANDSHAKES  # one accepted: the oldest dropped for it
    finally:
        stepped.run_freely()
        for sock in idle:
            sock.close()
        if sessions:
            sessions[0].sock.close()
        server.close()


def test_a_flood_to_the_end_of_the_file_descriptors_does_not_stop_the_server(tmp_path):
    key = KEYS[CONTROL]
    errors = tmp_path / "stderr"
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
    with open(errors, "w") as stderr:
        child = subprocess.Popen(
            [sys.executable, str(HERE / "hostile_server.py"), key, "--timeout", "0.5",
             "--spare-fds", "8"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)
    flood: list[socket.socket] = []
    try:
        started = json.loads(child.stdout.readline())
        address = started["address"]
        host, port = address.rsplit(":", 1)
        rss_before = _rss_mib(child.pid)
        for _ in range(30):  # more than its descriptors: accept() fails with EMFILE
            flood.append(socket.create_connection((host, int(port)), timeout=10))
        eventually(lambda: "EMFILE" in errors.read_text(), timeout=10, every=0.005,
                   what=lambda: f"EMFILE in the server's errors: {errors.read_text()}")
        took = time.monotonic()
        wire = connect(address, key, {"type": "hello"}, 20, server="test")
        wire.sock.settimeout(20)
        stats = wire.receive(max_payload=0)[0]  # served while the flood still stands
        took = time.monotonic() - took
        wire.close()
        assert stats["accepting"] is True
        assert stats["threads"] <= 3  # main, the event loop, this client's
        assert stats["handshaking"] <= MAX_HANDSHAKES
        assert stats["refused"] >= 8
        assert took < 15
        assert _rss_mib(child.pid) - rss_before < 16
        for sock in flood:
            sock.close()
        wire = connect(address, key, {"type": "hello"}, 10, server="test")  # and after it
        wire.sock.settimeout(10)
        assert wire.receive(max_payload=0)[0]["accepting"] is True
        wire.close()
    finally:
        for sock in flood:
            sock.close()
        child.stdin.close()
        assert child.wait(10) == 0
    log = errors.read_text()
    assert "Traceback" not in log and "ERROR" not in log, log
    failures = [line for line in log.splitlines() if "accepting a connection failed" in line]
    assert 1 <= len(failures) <= 5  # rate-limited, and backed off (not a busy loop)
    assert "(EMFILE: Too many open files)" in failures[0]


# -- the server's own resources ------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_accept_errors_are_retried_with_back_off_and_logged_rate_limited(seed, guard):
    rng = random.Random(seed)
    failures = rng.randint(6, 7)  # more than the log's burst of 5
    calls: list[float] = []

    class FailingListener(socket.socket):
        def accept(self):
            calls.append(time.monotonic())
            if len(calls) <= failures:
                raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
            return super().accept()

    listener = FailingListener(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    server = StreamServer(listener, KEYS[CONTROL], _control_serve, _control_welcome,
                          name="failing", server="driver")
    try:
        started = time.monotonic()
        wire = connect(server.address, KEYS[CONTROL], {"type": "hello", "node": "worker:0"},
                       server="driver")
        assert wire.receive(max_payload=0)[0]["type"] == "welcome"
        took = time.monotonic() - started
        wire.close()
        expected = sum(min(0.01 * 2 ** i, 1.0) for i in range(failures))  # 10 ms doubling
        assert expected * 0.9 < took < expected + 4.0
        assert len(calls) <= failures + 2  # one per back-off, not a busy loop
        assert calls[failures] - calls[0] > expected * 0.9
        logged = [m for m in (r.getMessage() for r in guard.caplog.records)
                  if "accepting a connection failed" in m]
        assert len(logged) == 5  # the rate limit's burst; the rest are counted
        assert "EMFILE" in logged[0] and server.accepting
    finally:
        server.close()
    assert any(f"accept() errors: {failures - 5} more" in r.getMessage()
               for r in guard.caplog.records)


def test_a_thread_that_cannot_be_started_costs_that_connection_only(guard, monkeypatch):
    listener = socket.create_server(("127.0.0.1", 0))
    server = StreamServer(listener, KEYS[CONTROL], _control_serve, _control_welcome,
                          name="threadless", server="driver")
    starts = []

    class NoThread(threading.Thread):
        def start(self) -> None:
            starts.append(self.name)
            if len(starts) == 1:
                raise RuntimeError("can't start new thread")
            super().start()

    monkeypatch.setattr(protocol, "threading", types.SimpleNamespace(
        Thread=NoThread, Lock=threading.Lock, current_thread=threading.current_thread))
    try:
        hello = {"type": "hello", "node": "worker:0"}
        with pytest.raises(ChannelError):
            connect(server.address, KEYS[CONTROL], hello, server="driver").receive()
        wire = connect(server.address, KEYS[CONTROL], hello, server="driver")
        assert wire.receive(max_payload=0)[0]["type"] == "welcome"
        wire.close()
        assert len(starts) == 2 and server.refused == 1 and server.accepting
        assert "no thread could be started to serve it" in guard.refusals()[0]
    finally:
        server.close()
