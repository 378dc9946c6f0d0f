#!/usr/bin/env python3
"""What the cluster protocol's cryptography costs per MiB of feed data, on each side.

    .venv/bin/python bench/protocol.py                               # median of 5
    .venv/bin/python bench/protocol.py --runs 5 --out bench/results-protocol.md

Per side, for a message of a 1 MiB payload (a feed batch) and a 60-byte JSON header:

* **before, HMAC-SHA256** (the scheme the protocol replaced, reproduced here): the sender and
  the receiver each hash ``nonce:direction:seq:`` and the prefix, header and payload
  (``hmac``/``hashlib``, OpenSSL's SHA-256); the receiver also compares the MAC.
* **after, AES-256-GCM, send**: :func:`tfrecord_io.cluster.protocol.seal`, which
  ``Stream.send`` calls: a new frame buffer, header and payload encrypted into it from
  memoryviews (``cryptography``'s GCM encryptor, ``update_into``), the tag.
* **after, AES-256-GCM, receive**: what ``Stream.receive`` does with a frame it has read: a
  new plaintext buffer and ``AESGCM.decrypt_into`` (decrypt and verify the tag).
* **Java** (with ``--java``): the feeding task's send, before (``HmacSHA256`` over the same
  bytes) and after (``FeedStream.send``'s ``AES/GCM/NoPadding`` calls), in a JShell script
  against the JDK's providers, after a warm-up.

Each figure is the time of 50 messages divided by 50 (ms per MiB), taken ``--runs`` times; the
table shows the median, min and max. Socket I/O is not included: it is the same either way.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tfrecord_io.cluster.protocol import (
    PREFIX_BYTES,
    TAG_BYTES,
    TO_SERVER,
    derive_key,
    gcm_nonce,
    seal,
)

MIB = 1 << 20
MESSAGES = 50
HEADER = b'{"type":"batch","job":12,"partition":345,"seq":6789,"records":1234}'

JAVA = r"""
import javax.crypto.*;
import javax.crypto.spec.*;
byte[] key = new byte[32]; new java.util.Random(1).nextBytes(key);
byte[] head = new byte[%(header)d];
byte[] payload = new byte[%(payload)d]; new java.util.Random(2).nextBytes(payload);
byte[] frame = new byte[12 + head.length + payload.length + 16];
Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
SecretKeySpec k = new SecretKeySpec(key, "AES");
long seq = 0;
void one() throws Exception {
  byte[] iv = java.nio.ByteBuffer.allocate(12).putInt(0).putLong(seq++).array();
  c.init(Cipher.ENCRYPT_MODE, k, new GCMParameterSpec(128, iv));
  c.updateAAD(frame, 0, 12);
  int at = 12 + c.update(head, 0, head.length, frame, 12);
  c.doFinal(payload, 0, payload.length, frame, at);
}
Mac mac = Mac.getInstance("HmacSHA256");
mac.init(new SecretKeySpec(key, "HmacSHA256"));
void signed() throws Exception {
  mac.reset();
  mac.update(("nonce:n:" + seq++ + ":").getBytes());
  mac.update(frame, 0, 12);
  mac.update(head);
  mac.update(payload);
  mac.doFinal();
}
for (int i = 0; i < 2000; i++) { one(); signed(); }
for (int r = 0; r < %(runs)d; r++) {
  long t = System.nanoTime();
  for (int i = 0; i < %(messages)d; i++) signed();
  System.out.println("hmac " + (System.nanoTime() - t) / 1e6 / %(messages)d);
  t = System.nanoTime();
  for (int i = 0; i < %(messages)d; i++) one();
  System.out.println("gcm " + (System.nanoTime() - t) / 1e6 / %(messages)d);
}
/exit
"""


def _time(step: Callable[[int], object], runs: int) -> list[float]:
    for seq in range(5):  # warm-up
        step(seq)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for seq in range(MESSAGES):
            step(seq)
        times.append((time.perf_counter() - started) / MESSAGES * 1000)
    return times


def measure(runs: int, java: bool) -> dict[str, list[float]]:
    payload = os.urandom(MIB)
    prefix = len(HEADER).to_bytes(4, "big") + MIB.to_bytes(8, "big")
    secret = os.urandom(32).hex()
    nonce = os.urandom(16).hex()

    def hmac_side(seq: int) -> bytes:
        mac = hmac.new(secret.encode(), f"{nonce}:n:{seq}:".encode(), hashlib.sha256)
        mac.update(prefix)
        mac.update(HEADER)
        mac.update(payload)
        return mac.digest()

    expected = hmac_side(0)

    def hmac_receive(seq: int) -> bool:
        return hmac.compare_digest(hmac_side(0), expected)

    key = derive_key(secret, b"s" * 16, b"c" * 16, TO_SERVER, "driver")
    frame = bytes(seal(key, 0, HEADER, payload))
    opener = AESGCM(key)
    sealed = memoryview(frame)[PREFIX_BYTES:]

    def gcm_send(seq: int) -> memoryview:
        return seal(key, seq, HEADER, payload)

    def gcm_receive(seq: int) -> bytearray:
        plain = bytearray(len(sealed) - TAG_BYTES)
        opener.decrypt_into(gcm_nonce(0), sealed, frame[:PREFIX_BYTES], plain)
        return plain

    results = {
        "before: HMAC-SHA256, send": _time(hmac_side, runs),
        "before: HMAC-SHA256, receive": _time(hmac_receive, runs),
        "after: AES-256-GCM, send (Python)": _time(gcm_send, runs),
        "after: AES-256-GCM, receive (Python)": _time(gcm_receive, runs),
    }
    if java and shutil.which("jshell"):
        java_times = _java(runs)
        results["before: HmacSHA256, send (Java)"] = java_times["hmac"]
        results["after: AES/GCM/NoPadding, send (Java)"] = java_times["gcm"]
    return results


def _java(runs: int) -> dict[str, list[float]]:
    script = JAVA % {"header": len(HEADER), "payload": MIB, "runs": runs, "messages": MESSAGES}
    with tempfile.NamedTemporaryFile("w", suffix=".jsh", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(["jshell", "-q", f.name], capture_output=True, text=True,
                             check=True, timeout=600).stdout
    finally:
        pathlib.Path(f.name).unlink()
    times: dict[str, list[float]] = {"hmac": [], "gcm": []}
    for line in out.splitlines():
        kind, _, ms = line.partition(" ")
        if kind in times:
            times[kind].append(float(ms))
    return times


def table(results: dict[str, list[float]], runs: int) -> str:
    lines = [
        f"Per side, ms per MiB (a 1 MiB payload and a {len(HEADER)}-byte header per message), "
        f"median of {runs} runs of {MESSAGES} messages (min-max). {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| what | ms/MiB | min-max |",
        "|---|---|---|",
    ]
    for name, times in results.items():
        lines.append(f"| {name} | {statistics.median(times):.3f} | "
                     f"{min(times):.3f}-{max(times):.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--java", action="store_true", help="also time the JDK's AES/GCM")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    text = table(measure(args.runs, args.java), args.runs)
    sys.stdout.write(text)
    if args.out:
        command = "PYTHONPATH=$PWD .venv/bin/python bench/protocol.py " + " ".join(sys.argv[1:])
        args.out.write_text(
            "# The cluster protocol's cryptography, per MiB and side\n\n"
            f"`{command}`\n\n" + text
        )


if __name__ == "__main__":
    main()
