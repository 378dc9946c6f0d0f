"""Hosts on a virtual network, for tests: Linux network namespaces joined by a bridge.

:class:`VirtualNetwork` makes a bridge in the root namespace holding ``198.18.N.1/24``
(198.18.0.0/15 is reserved for network tests, RFC 2544) and one namespace per host, each joined
to the bridge by a veth pair and holding ``198.18.N.(11+i)/24`` (and its own loopback). No route
and no NAT lead anywhere else: from a namespace only the bridge and the other hosts answer.

Everything made is named ``tfrio<PID><letter>...`` (PID: the process that made it), so
:func:`remove_stale` can delete what a crashed run left, and :meth:`VirtualNetwork.remove` deletes
everything, killing the processes still in the namespaces; it also runs at interpreter exit. Needs
root and ``ip``.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from tfrecord_io.errors import StandaloneClusterError

__all__ = ["PREFIX", "Host", "VirtualNetwork", "remove_stale"]

log = logging.getLogger(__name__)

PREFIX = "tfrio"
_NAME = re.compile(rf"^{PREFIX}(\d+)")
_serial = itertools.count()


def _ip(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise StandaloneClusterError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ours() -> tuple[list[str], list[str]]:
    """Our namespaces and links (in the root namespace): (namespaces, links)."""
    namespaces = [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]
    links = [line.split(":")[1].strip().split("@")[0]
             for line in _ip("-o", "link", "show").splitlines() if ":" in line]
    return ([n for n in namespaces if _NAME.match(n)], [n for n in links if _NAME.match(n)])


def _kill_namespace(namespace: str) -> None:
    """SIGKILLs every process in ``namespace`` and deletes it."""
    for pid in _ip("netns", "pids", namespace, check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    _ip("netns", "del", namespace, check=False)


def remove_stale() -> None:
    """Deletes the namespaces and links that a process no longer alive left behind."""
    if shutil.which("ip") is None:
        return
    namespaces, links = _ours()
    for name in namespaces:
        pid = int(_NAME.match(name).group(1))  # type: ignore[union-attr]
        if not _alive(pid):
            log.info("removing stale network namespace %s", name)
            _kill_namespace(name)
    for name in links:
        pid = int(_NAME.match(name).group(1))  # type: ignore[union-attr]
        if not _alive(pid):
            log.info("removing stale link %s", name)
            _ip("link", "del", name, check=False)


@dataclass(frozen=True)
class Host:
    """One host of the network: its namespace, address and interface (inside the namespace)."""

    namespace: str
    address: str
    interface: str

    def command(self, args: Sequence[str]) -> list[str]:
        """``args`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def set_link(self, up: bool) -> None:
        """Plugs (``up``) or unplugs this host's cable: its interface up or down."""
        _ip("netns", "exec", self.namespace, "ip", "link", "set", self.interface,
            "up" if up else "down")


class VirtualNetwork:
    """A bridge in the root namespace and ``hosts`` namespaces on it; see the module's doc.

    Attributes (once made): :attr:`gateway` (the bridge's address, the root namespace's on this
    network), :attr:`hosts`.
    """

    def __init__(self, hosts: int = 2) -> None:
        self.count = hosts
        # tfrio<PID><letter>: unique among this process's networks, and short enough that
        # tag + "br" or "v<i>" is a valid interface name (at most 15 characters).
        self.tag = f"{PREFIX}{os.getpid()}{chr(ord('a') + next(_serial) % 26)}"
        self.bridge = f"{self.tag}br"
        self.subnet: int | None = None
        self.hosts: list[Host] = []
        self._made = False

    @property
    def gateway(self) -> str:
        """The bridge's address (what the root namespace binds to be reached by the hosts)."""
        return f"198.18.{self.subnet}.1"

    def create(self) -> VirtualNetwork:
        """Makes the bridge and the namespaces; removes what it made if anything fails."""
        if os.geteuid() != 0:
            raise StandaloneClusterError("network namespaces need root: run the tests as root")
        if shutil.which("ip") is None:
            raise StandaloneClusterError("no `ip` command: install iproute2")
        remove_stale()
        self.subnet = self._free_subnet()
        self._made = True
        _LIVE.add(self)
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i in range(self.count):
                namespace, outside = f"{self.tag}-h{i}", f"{self.tag}v{i}"
                host = Host(namespace, f"198.18.{self.subnet}.{11 + i}", "eth0")
                _ip("netns", "add", namespace)
                _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0",
                    "netns", namespace)
                _ip("link", "set", outside, "master", self.bridge, "up")
                _ip("-n", namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
                _ip("-n", namespace, "link", "set", "eth0", "up")
                _ip("-n", namespace, "link", "set", "lo", "up")
                self.hosts.append(host)
        except BaseException:
            self.remove()
            raise
        return self

    @staticmethod
    def _free_subnet() -> int:
        used = {int(m) for m in re.findall(r"inet 198\.18\.(\d+)\.", _ip("-o", "addr", "show"))}
        for n in range(256):
            if n not in used:
                return n
        raise StandaloneClusterError("no free /24 left in 198.18.0.0/16")

    def remove(self) -> None:
        """Kills every process in the namespaces; deletes the namespaces, veths and bridge."""
        if not self._made:
            return
        for i in range(self.count):
            _kill_namespace(f"{self.tag}-h{i}")
            _ip("link", "del", f"{self.tag}v{i}", check=False)
        _ip("link", "del", self.bridge, check=False)
        self.hosts = []
        self._made = False
        _LIVE.discard(self)

    def __enter__(self) -> VirtualNetwork:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()


_LIVE: set[VirtualNetwork] = set()


@atexit.register
def _remove_all() -> None:
    for network in list(_LIVE):
        network.remove()
