"""The virtual network of the standalone tests: hosts reach each other and the bridge, nothing
else, and what a crashed run left is removed at the next start."""

from __future__ import annotations

import subprocess
import sys

from tfrecord_io.testing.standalone import VirtualNetwork, remove_stale

_CONNECT = ("import socket, sys\n"
            "try:\n"
            "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)\n"
            "    print('connected')\n"
            "except OSError as e:\n"
            "    print(e.errno)\n")


def _connect_from(host, address: str, port: int) -> str:
    return subprocess.run(host.command([sys.executable, "-c", _CONNECT, address, str(port)]),
                          capture_output=True, text=True, check=True).stdout.strip()


def _namespaces() -> list[str]:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                          check=True).stdout.split()


def test_a_host_reaches_the_bridge_address_and_nothing_outside_the_network(network):
    import socket

    with socket.socket() as server:
        server.bind((network.gateway, 0))
        server.listen()
        assert _connect_from(network.hosts[0], network.gateway, server.getsockname()[1]) \
            == "connected"
    assert _connect_from(network.hosts[0], "192.0.2.1", 80) == "101"  # ENETUNREACH


def test_what_a_dead_process_left_is_removed_at_the_next_start():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = f"tfrio{dead.pid}-h0"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    try:
        remove_stale()
        assert stale not in _namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", stale], capture_output=True)


def test_removing_the_network_deletes_its_namespaces_and_links():
    net = VirtualNetwork(2).create()
    names = [h.namespace for h in net.hosts]
    net.remove()
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           check=True).stdout
    assert not set(names) & set(_namespaces())
    assert net.tag not in links
