"""The control channel refuses connections without the cluster's secret, and the cluster goes on."""

from __future__ import annotations

import socket

from tfrecord_io import cluster
from tfrecord_io.cluster.protocol import MAGIC, NONCE_BYTES, TO_SERVER, derive_key, seal

import cluster_programs
from processes import node_processes


def _connect(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _greeting(sock: socket.socket) -> bytes:
    """The server's opening: the protocol's magic and its nonce (returned)."""
    data = b""
    while len(data) < len(MAGIC) + NONCE_BYTES:
        data += sock.recv(64)
    return data[len(MAGIC):]


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_connections_without_the_secret_are_refused_and_the_cluster_finishes(sc, tmp_path):
    flag = tmp_path / "go"
    c = cluster.run(sc, cluster_programs.wait_for_file,
                    {"out": str(tmp_path), "flag": str(flag)}, num_workers=2)
    with c:
        # a client that knows the protocol but not the secret
        forged = _connect(c.control_address)
        server_nonce = _greeting(forged)
        client_nonce = bytes(NONCE_BYTES)
        forged.sendall(MAGIC + client_nonce)
        key = derive_key("guessed key", server_nonce, client_nonce, TO_SERVER, "driver")
        forged.sendall(seal(key, 0, b'{"type":"hello","node":"worker:0","attempt":0}'))
        assert _closed_by_peer(forged)
        # a client that sends garbage (e.g. a pickle)
        garbage = _connect(c.control_address)
        _greeting(garbage)
        garbage.sendall(b"\x80\x04\x95 not the protocol, not encrypted\n" * 2)
        assert _closed_by_peer(garbage)
        forged.close()
        garbage.close()
        flag.write_text("go")
        c.wait(timeout=300)
        assert c.refused_connections == 2
    assert node_processes(c.name) == []
