#!/usr/bin/env python3
"""Where a fed batch's bytes are copied in a node process, and what each copy costs per MiB.

    .venv/bin/python bench/receive_path.py                  # median of 5 runs
    .venv/bin/python bench/receive_path.py --runs 5 --out bench/results-receive-path.md

A feed batch is a ``batch`` message of the cluster protocol whose payload is about 1 MiB of
records (here 1,000 serialized records of 1,039 bytes, the length table in front). On its way
from the socket to the records TensorFlow hands ``main_fun``, each byte is:

1. **read** from the socket into the connection's receive buffer (``Stream.receive``:
   ``recv_into`` a buffer reused from message to message, not allocated or zeroed per message);
2. **decrypted** into the message's own plaintext buffer (``AESGCM.decrypt_into``, which also
   checks the tag; the buffer is left uninitialized, as decryption writes all of it);
3. **made a Python ``bytes``** for TensorFlow (``feed.batch_format.locate``;
   ``tf.data.Dataset.from_generator`` takes a ``tf.string`` only from ``bytes``);
4. **made a tensor**: TensorFlow copies the ``bytes`` into its scalar string (``from_generator``'s
   conversion, here ``tf.constant``);
5. **cut into records** (``tf.strings.substr`` with the located offsets: one string per record,
   which is what any ``tf.data`` pipeline of records holds, the file reader's included).

Steps 1 and 2 are the protocol's, 3 to 5 the hand-over to TensorFlow. Each step is timed on its
own over ``--messages`` batches (the socket read through a ``socketpair``, a writer thread
filling it), ``--runs`` times; the table gives the median, min and max in ms per MiB.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, too
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from tfrecord_io.cluster import protocol
from tfrecord_io.cluster.feed import batch_format

RECORDS = 1000
RECORD_BYTES = 1039


def _batch() -> bytes:
    rng = np.random.default_rng(0)
    return batch_format.pack(rng.bytes(RECORD_BYTES) for _ in range(RECORDS))


def _time(fn: Callable[[], None], messages: int) -> float:
    fn()  # warm
    start = time.perf_counter()
    for _ in range(messages):
        fn()
    return (time.perf_counter() - start) / messages


def measure(messages: int) -> dict[str, float]:
    """Seconds per batch of each step."""
    import tensorflow as tf

    payload = _batch()
    key = os.urandom(32)
    sealed = bytes(protocol.seal(key, 0, b'{"type":"batch"}', payload))
    figures: dict[str, float] = {}

    reader, writer = socket.socketpair()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    inbox = bytearray(len(sealed))
    stop = threading.Event()

    def write() -> None:
        while not stop.is_set():
            try:
                writer.sendall(sealed)
            except OSError:
                return

    thread = threading.Thread(target=write, daemon=True)
    thread.start()

    def read() -> None:
        view, got = memoryview(inbox), 0
        while got < len(inbox):
            got += reader.recv_into(view[got:])

    figures["read"] = _time(read, messages)
    stop.set()
    reader.close()
    writer.close()
    thread.join()

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    opener = AESGCM(key)
    prefix, body = sealed[:protocol.PREFIX_BYTES], memoryview(sealed)[protocol.PREFIX_BYTES:]
    plain = np.empty(len(body) - protocol.TAG_BYTES, np.uint8)

    def decrypt() -> None:
        out = np.empty(len(body) - protocol.TAG_BYTES, np.uint8)
        opener.decrypt_into(protocol.gcm_nonce(0), body, prefix, out)

    figures["decrypt"] = _time(decrypt, messages)
    opener.decrypt_into(protocol.gcm_nonce(0), body, prefix, plain)
    view = memoryview(plain)[len(b'{"type":"batch"}'):]
    figures["bytes"] = _time(lambda: bytes(view), messages)
    batch = batch_format.locate(view, RECORDS)
    figures["tensor"] = _time(lambda: tf.constant(batch.payload), messages)
    tensor, starts, lengths = (tf.constant(batch.payload), tf.constant(batch.starts),
                               tf.constant(batch.lengths))
    figures["cut"] = _time(lambda: tf.strings.substr(tensor, starts, lengths), messages)
    return figures


STEPS = [
    ("read", "1. socket -> the connection's receive buffer (`recv_into`)"),
    ("decrypt", "2. decrypt and verify -> the message's plaintext (`AESGCM.decrypt_into`)"),
    ("bytes", "3. plaintext -> `bytes` for TensorFlow (`locate`)"),
    ("tensor", "4. `bytes` -> scalar `tf.string` (TensorFlow's copy)"),
    ("cut", "5. scalar -> one `tf.string` per record (`tf.strings.substr`)"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--out", default=None, help="also write the table here")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    runs = [measure(args.messages) for _ in range(args.runs)]
    mib = len(_batch()) / (1 << 20)
    lines = [
        f"`{' '.join(['.venv/bin/python', 'bench/receive_path.py', *sys.argv[1:]])}`",
        "",
        f"A batch of {RECORDS:,} records of {RECORD_BYTES:,} bytes ({mib:.2f} MiB); ms per MiB, "
        f"median of {args.runs} runs of {args.messages} batches (min-max). {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, load average {load:.1f} "
        f"at the start, {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| step | ms/MiB | min-max |",
        "|---|---|---|",
    ]
    total = 0.0
    for key, label in STEPS:
        values = [r[key] / mib * 1e3 for r in runs]
        total += statistics.median(values)
        lines.append(f"| {label} | {statistics.median(values):.3f} | "
                     f"{min(values):.3f}-{max(values):.3f} |")
    lines.append(f"| all five | {total:.3f} | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text("# A fed batch's copies in the node (bench/receive_path.py)\n\n"
                                  + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
