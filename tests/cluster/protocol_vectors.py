"""Makes ``docs/protocol-vectors.json``, the golden vectors of the protocol's version 2, from
fixed inputs.

``python tests/cluster/protocol_vectors.py`` rewrites the file; the Python tests
(``test_protocol.py``) and the JUnit tests (``FeedStreamTest``) check the code against it.
Nothing in it is random: the secret, the server's name, both nonces and the messages are fixed
here.

The file's layout (every byte string in hex; ``secret``, ``server_nonce``, ``client_nonce``,
``keys`` and ``messages`` have the places and meanings they had in version 1, except that the
connection keys now derive from ``feed_key`` and ``server``, not from ``secret``):

``about``
    what the file is.
``version``
    the protocol's version, 2.
``secret``
    the cluster's secret (64 hex characters; the key material is their UTF-8 bytes). It never
    leaves the driver: only the purpose keys below are made from it.
``purpose``
    the purpose keys of ``secret`` (``protocol.purpose_key``), by purpose: ``control`` and
    ``feed``, each 64 hex characters (used, like the secret, as UTF-8 text).
``feed_key``
    ``purpose["feed"]`` again: the key a feeding task gets (the Java client reads it here).
``server``
    the name of the server the connection is made to (a node's feed server: ``worker:0``).
``server_nonce``, ``client_nonce``
    the handshake's nonces.
``server_greeting``, ``client_greeting``
    ``MAGIC || nonce`` as each side sends it.
``keys``
    the connection's keys, ``client_to_server`` and ``server_to_client``:
    ``derive_key(feed_key, server_nonce, client_nonce, TO_SERVER / TO_CLIENT, server)``.
``other_server``
    ``{"server": "worker:1", "keys": {...}}``: the same connection's keys had the client meant
    to reach ``worker:1``: they differ, so a relay that swaps two nodes' links gets nothing
    through.
``control_keys``
    ``{"server": "driver", "keys": {...}}``: the keys of a control connection (under
    ``purpose["control"]``) with the same nonces.
``messages``
    a feeding task's connection under ``keys``, in order: each with its ``direction``
    (``client_to_server`` or ``server_to_client``), ``seq`` (its number in its direction),
    ``header`` (the JSON text, as both implementations write it: compact, UTF-8, non-ASCII
    characters unescaped), ``payload`` and ``frame`` (the bytes on the wire). The first is the
    feeder's hello, for a feed whose name is not ASCII.
"""

from __future__ import annotations

import json
import pathlib

from tfrecord_io.cluster.feed.batch_format import pack
from tfrecord_io.cluster.protocol import (
    CONTROL,
    FEED,
    MAGIC,
    TO_CLIENT,
    TO_SERVER,
    VERSION,
    derive_key,
    purpose_key,
    seal,
)

PATH = pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocol-vectors.json"

SECRET = "00112233445566778899aabbccddeeff" * 2
SERVER = "worker:0"
OTHER_SERVER = "worker:1"
SERVER_NONCE = bytes(range(0x10, 0x20))
CLIENT_NONCE = bytes(range(0xA0, 0xB0))

# A feeding task's connection (a feed named with non-ASCII characters), then one message with a
# payload from the server.
MESSAGES = [
    ("client_to_server", '{"type":"feeder","feed":"données-ü","epoch":1,"attempt":0}', b""),
    ("server_to_client", '{"type":"ready"}', b""),
    ("client_to_server", '{"type":"batch","job":0,"partition":3,"seq":7,"records":2}',
     pack([b"a", b"bc"])),
    ("client_to_server", '{"type":"end"}', b""),
    ("server_to_client", '{"type":"ack","stopped":false}', b""),
    ("server_to_client", '{"type":"example"}', b"payload from the server"),
]


def _keys(key: str, server: str) -> dict[str, bytes]:
    return {
        "client_to_server": derive_key(key, SERVER_NONCE, CLIENT_NONCE, TO_SERVER, server),
        "server_to_client": derive_key(key, SERVER_NONCE, CLIENT_NONCE, TO_CLIENT, server),
    }


def _hex(keys: dict[str, bytes]) -> dict[str, str]:
    return {k: v.hex() for k, v in keys.items()}


def make_vectors() -> dict:
    """The vectors, as written to :data:`PATH`."""
    purpose = {p: purpose_key(SECRET, p) for p in (CONTROL, FEED)}
    keys = _keys(purpose[FEED], SERVER)
    seqs = {"client_to_server": 0, "server_to_client": 0}
    messages = []
    for direction, header, payload in MESSAGES:
        seq = seqs[direction]
        seqs[direction] += 1
        frame = seal(keys[direction], seq, header.encode("utf-8"), payload)
        messages.append({
            "direction": direction,
            "seq": seq,
            "header": header,
            "payload": payload.hex(),
            "frame": bytes(frame).hex(),
        })
    return {
        "about": "Golden vectors of the cluster protocol, version 2 (docs/protocol.md), made by "
                 "tests/cluster/protocol_vectors.py (its docstring describes every field). "
                 "Byte strings are hex.",
        "version": VERSION,
        "secret": SECRET,
        "purpose": purpose,
        "feed_key": purpose[FEED],
        "server": SERVER,
        "server_nonce": SERVER_NONCE.hex(),
        "client_nonce": CLIENT_NONCE.hex(),
        "server_greeting": (MAGIC + SERVER_NONCE).hex(),
        "client_greeting": (MAGIC + CLIENT_NONCE).hex(),
        "keys": _hex(keys),
        "other_server": {"server": OTHER_SERVER, "keys": _hex(_keys(purpose[FEED], OTHER_SERVER))},
        "control_keys": {"server": "driver", "keys": _hex(_keys(purpose[CONTROL], "driver"))},
        "messages": messages,
    }


if __name__ == "__main__":
    PATH.write_text(json.dumps(make_vectors(), indent=2) + "\n")
