"""Makes ``docs/protocol-vectors.json``, the protocol's golden vectors, from fixed inputs.

``python tests/cluster/protocol_vectors.py`` rewrites the file; the Python tests
(``test_protocol.py``) and the JUnit tests (``FeedStreamTest``) check the code against it.
Nothing in it is random: the secret, both nonces and the messages are fixed here.
"""

from __future__ import annotations

import json
import pathlib

from tfrecord_io.cluster.feed.batch_format import pack
from tfrecord_io.cluster.protocol import MAGIC, TO_CLIENT, TO_SERVER, derive_key, seal

PATH = pathlib.Path(__file__).resolve().parents[2] / "docs" / "protocol-vectors.json"

SECRET = "00112233445566778899aabbccddeeff" * 2
SERVER_NONCE = bytes(range(0x10, 0x20))
CLIENT_NONCE = bytes(range(0xA0, 0xB0))

# A feeding task's connection, then one message with a payload from the server.
MESSAGES = [
    ("client_to_server", '{"type":"feeder","feed":"train","epoch":1}', b""),
    ("server_to_client", '{"type":"ready"}', b""),
    ("client_to_server", '{"type":"batch","job":0,"partition":3,"seq":7,"records":2}',
     pack([b"a", b"bc"])),
    ("client_to_server", '{"type":"end"}', b""),
    ("server_to_client", '{"type":"ack","stopped":false}', b""),
    ("server_to_client", '{"type":"example"}', b"payload from the server"),
]


def make_vectors() -> dict:
    """The vectors, as written to :data:`PATH`."""
    keys = {
        "client_to_server": derive_key(SECRET, SERVER_NONCE, CLIENT_NONCE, TO_SERVER),
        "server_to_client": derive_key(SECRET, SERVER_NONCE, CLIENT_NONCE, TO_CLIENT),
    }
    seqs = {"client_to_server": 0, "server_to_client": 0}
    messages = []
    for direction, header, payload in MESSAGES:
        seq = seqs[direction]
        seqs[direction] += 1
        frame = seal(keys[direction], seq, header.encode(), payload)
        messages.append({
            "direction": direction,
            "seq": seq,
            "header": header,
            "payload": payload.hex(),
            "frame": bytes(frame).hex(),
        })
    return {
        "about": "Golden vectors of the cluster protocol (docs/protocol.md), made by "
                 "tests/cluster/protocol_vectors.py. Byte strings are hex.",
        "secret": SECRET,
        "server_nonce": SERVER_NONCE.hex(),
        "client_nonce": CLIENT_NONCE.hex(),
        "server_greeting": (MAGIC + SERVER_NONCE).hex(),
        "client_greeting": (MAGIC + CLIENT_NONCE).hex(),
        "keys": {k: v.hex() for k, v in keys.items()},
        "messages": messages,
    }


if __name__ == "__main__":
    PATH.write_text(json.dumps(make_vectors(), indent=2) + "\n")
