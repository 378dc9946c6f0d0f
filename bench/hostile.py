#!/usr/bin/env python3
"""What a flood of unauthenticated connections costs a cluster server, and a legitimate client.

    PYTHONPATH=$PWD .venv/bin/python bench/hostile.py                 # median of 5
    PYTHONPATH=$PWD .venv/bin/python bench/hostile.py --runs 5 --out bench/results-hostile.md

The server runs in a process of its own on 127.0.0.1 (started afresh for every run), as the
driver's control server runs: it welcomes ``{"type": "hello", "node": ...}`` under the control
key and answers each client with one message. Two designs:

* **now**: :class:`tfrecord_io.cluster.protocol.StreamServer`: one event-loop thread makes
  every handshake (non-blocking sockets, :mod:`selectors`), at most ``MAX_HANDSHAKES`` (32) at
  once, each cut ``HANDSHAKE_TIMEOUT`` (10 s) after its accept; a thread per authenticated
  connection only.
* **before** (version 1, reproduced here): a thread per accepted connection, which makes the
  handshake with blocking reads, each given 10 s (a per-read timeout, not a total deadline).

Attacks, from this process, all loopback:

* **none**: the legitimate client alone.
* **held**: ``--flood`` (300) connections opened and held without a byte sent.
* **dribbling**: as many connections, each sending a byte of a plausible handshake every 0.6 s.

Per run, after a warm-up connection, 2 s after the attack began: the server's connections held (its
open descriptors beyond its idle ones), threads and resident memory (``/proc/PID/status``), and the
time a legitimate client takes to connect, make the handshake and get its reply (the median of 5
clients one after the other; each waits up to 15 s);
for the dribbling attack, the connections still held 2 s after the handshake deadline too. The
table gives the median of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import platform
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tfrecord_io.cluster import protocol
from tfrecord_io.cluster.protocol import (
    CONTROL,
    MAGIC,
    NONCE_BYTES,
    PREFIX_BYTES,
    TAG_BYTES,
    TO_CLIENT,
    TO_SERVER,
    Stream,
    StreamServer,
    connect,
    derive_key,
    gcm_nonce,
    purpose_key,
)

KEY = purpose_key("be7c4" * 12 + "0123", CONTROL)
SERVER = "driver"
HELLO = {"type": "hello", "node": "worker:0", "attempt": 0}
SETTLE = 2.0  # seconds between the attack's start and the measures
DRIBBLE_EVERY = 0.6
LEGIT_TIMEOUT = 15.0
LEGIT_TRIES = 5  # legitimate connections per run, one after the other (their median)
SCENARIOS = ("none", "held", "dribbling")
DESIGNS = ("now", "before")


# -- the server, in its own process --------------------------------------------------------------

def _serve(stream: Stream, hello: dict) -> None:
    stream.send({"type": "welcome"})
    while True:
        stream.receive(max_payload=0)


def _welcome(hello: dict) -> str | None:
    return None if hello["type"] == "hello" else "not a hello"


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))  # each read given the socket's timeout
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _before_handshake(sock: socket.socket, timeout: float) -> None:
    """Version 1's server side, in the connection's own thread: blocking reads, each with
    *timeout* (a dribbling peer resets it with every byte)."""
    try:
        sock.settimeout(timeout)
        nonce = os.urandom(NONCE_BYTES)
        sock.sendall(MAGIC + nonce)
        greeting = _read(sock, len(MAGIC) + NONCE_BYTES)
        if greeting[: len(MAGIC)] != MAGIC:
            raise OSError("another protocol")
        client_nonce = greeting[len(MAGIC):]
        prefix = _read(sock, PREFIX_BYTES)
        head_len = int.from_bytes(prefix[:4], "big")
        if head_len > protocol.MAX_HEADER or any(prefix[4:]):
            raise OSError("over the limits")
        sealed = _read(sock, head_len + TAG_BYTES)
        receive_key = derive_key(KEY, nonce, client_nonce, TO_SERVER, SERVER)
        hello = json.loads(AESGCM(receive_key).decrypt(gcm_nonce(0), sealed, prefix))
        sock.settimeout(None)
        stream = Stream(sock, derive_key(KEY, nonce, client_nonce, TO_CLIENT, SERVER),
                        receive_key)
        stream._received = 1  # noqa: SLF001 - the hello, read above
        _serve(stream, hello)
    except (OSError, ValueError, InvalidTag, protocol.ChannelError):
        pass
    finally:
        sock.close()


def _before_server(listener: socket.socket, timeout: float) -> None:
    listener.listen(128)

    def loop() -> None:
        while True:
            sock, _ = listener.accept()
            threading.Thread(target=_before_handshake, args=(sock, timeout), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def serve_main(design: str, deadline: float) -> None:
    """The child: serve with *design* until stdin closes."""
    logging.basicConfig(level=logging.ERROR)  # its refusals are what the attack makes
    listener = socket.create_server(("127.0.0.1", 0))
    if design == "now":
        protocol.HANDSHAKE_TIMEOUT = deadline
        StreamServer(listener, KEY, _serve, _welcome, name="bench", server=SERVER)
    else:
        _before_server(listener, deadline)
    host, port = listener.getsockname()[:2]
    print(f"{host}:{port}", flush=True)
    sys.stdin.read()


# -- the attack, from here -----------------------------------------------------------------------

def _status(pid: int) -> dict[str, float]:
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                values[key] = float(value.split()[0])
    values["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return values


def _legit(address: str) -> float | None:
    started = time.monotonic()
    try:
        wire = connect(address, KEY, HELLO, LEGIT_TIMEOUT, server=SERVER)
        wire.sock.settimeout(LEGIT_TIMEOUT)
        wire.receive(max_payload=0)
        wire.close()
    except (OSError, protocol.ChannelError):
        return None
    return time.monotonic() - started


class Dribbler:
    """Sends a byte of a plausible handshake on each socket every DRIBBLE_EVERY s."""

    def __init__(self, socks: list[socket.socket], rng: random.Random) -> None:
        self.socks = socks
        self.data = MAGIC + rng.randbytes(NONCE_BYTES + 64)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        at = 0
        while not self.stop.wait(DRIBBLE_EVERY if at else 0):
            for sock in self.socks:
                try:
                    sock.send(self.data[at % len(self.data): at % len(self.data) + 1])
                except OSError:
                    pass
            at += 1


def run_once(design: str, scenario: str, flood: int, deadline: float,
             rng: random.Random) -> dict[str, Any]:
    """One run: a fresh server, the attack, the measures."""
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1]),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # numpy's pool: no threads
    child = subprocess.Popen([sys.executable, __file__, "--serve", design, "--deadline",
                              str(deadline)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env, text=True)
    socks: list[socket.socket] = []
    dribbler = None
    try:
        address = child.stdout.readline().strip()
        host, port = address.rsplit(":", 1)
        if _legit(address) is None:  # a warm-up: the first connection loads the cryptography
            raise RuntimeError(f"the {design} server does not serve")
        time.sleep(0.2)
        idle = _status(child.pid)
        if scenario != "none":
            for _ in range(flood):
                sock = socket.create_connection((host, int(port)), timeout=10)
                sock.setblocking(False)
                socks.append(sock)
            if scenario == "dribbling":
                dribbler = Dribbler(socks, rng)
        time.sleep(SETTLE)
        during = _status(child.pid)
        tries = [_legit(address) for _ in range(LEGIT_TRIES)]
        took = None if None in tries else statistics.median(tries)
        result = {
            "held": during["fds"] - idle["fds"],
            "threads": during["Threads"],
            "rss": during["VmRSS"] / 1024,
            "legit": took,
        }
        if scenario == "dribbling":
            time.sleep(max(deadline + 2.0 - SETTLE, 0))
            result["held_after"] = _status(child.pid)["fds"] - idle["fds"]
        return result
    finally:
        if dribbler is not None:
            dribbler.stop.set()
            dribbler.thread.join(5)
        for sock in socks:
            sock.close()
        child.stdin.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _median(values: list[float | None]) -> str:
    done = [v for v in values if v is not None]
    if len(done) < len(values):
        return f"not served in {len(values) - len(done)} of {len(values)}"
    return f"{statistics.median(done) * 1000:.1f} ms"


def table(results: dict[tuple[str, str], list[dict[str, Any]]], args: argparse.Namespace) -> str:
    """The Markdown table of *results* (per design and scenario, the runs)."""
    lines = [
        f"Median of {args.runs} runs; flood of {args.flood} connections, measured {SETTLE:g} s "
        f"after it began; handshake deadline {args.deadline:g} s; {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "| server | attack | connections held | server threads | RSS MiB | legitimate client "
        "served in | held after the deadline |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    names = {"now": "now: event loop, cap 32, total deadline",
             "before": "before: a thread per connection, per-read timeout"}
    for (design, scenario), runs in results.items():
        after = (f"{statistics.median(r['held_after'] for r in runs):.0f}"
                 if scenario == "dribbling" else "")
        lines.append(
            f"| {names[design]} | {scenario} "
            f"| {statistics.median(r['held'] for r in runs):.0f} "
            f"| {statistics.median(r['threads'] for r in runs):.0f} "
            f"| {statistics.median(r['rss'] for r in runs):.1f} "
            f"| {_median([r['legit'] for r in runs])} | {after} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--deadline", type=float, default=protocol.HANDSHAKE_TIMEOUT,
                        help="the handshake deadline (per read, before)")
    parser.add_argument("--designs", default=",".join(DESIGNS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--serve", choices=DESIGNS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_main(args.serve, args.deadline)
        return
    rng = random.Random(args.seed)
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for design in args.designs.split(","):
        for scenario in SCENARIOS:
            results[(design, scenario)] = [
                run_once(design, scenario, args.flood, args.deadline, rng)
                for _ in range(args.runs)]
            print(f"{design} / {scenario}: {results[(design, scenario)]}", file=sys.stderr)
    text = table(results, args)
    sys.stdout.write(text)
    if args.out:
        command = "PYTHONPATH=$PWD .venv/bin/python bench/hostile.py " + " ".join(sys.argv[1:])
        args.out.write_text("# A cluster server under a flood of unauthenticated connections\n\n"
                            f"`{command}`\n\n" + text)


if __name__ == "__main__":
    main()
