"""The platform tag of a wheel that carries the TensorFlow plugin, read from the plugin itself.

The plugin is the only native code in the wheel, and it is no Python extension: TensorFlow loads
it with ``dlopen``. So the wheel is ``py3-none-PLATFORM``: any Python 3, no Python ABI, and a
PLATFORM that says which Linux systems can load it. That is a ``manylinux_2_X`` tag when the
plugin's needs fit the manylinux policy X (PEP 600), else the plain ``linux_x86_64`` tag, which
claims nothing beyond the build machine's kind.

What the plugin needs is read from its ELF headers (``objdump -p``, from binutils, which g++
needs anyway): the shared libraries it names (``NEEDED``) and the symbol versions it requires
from them (``GLIBC_2.14``, ``GLIBCXX_3.4.21``, ...). A policy fits when every library is one the
policy lets a wheel expect on the system, or TensorFlow's own framework library (the plugin is
only ever loaded into a process where TensorFlow has already loaded it, and ``dlopen`` resolves
it there by its soname), and every required version is at most the policy's newest of that
namespace. The newest versions per policy are those of auditwheel's manylinux policy (x86_64).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

__all__ = ["MANYLINUX_X86_64", "plugin_needs", "platform_tag"]

#: Newest symbol version of each namespace that a manylinux policy allows on x86_64 (auditwheel's
#: policy file), oldest policy first.
MANYLINUX_X86_64: dict[str, dict[str, tuple[int, ...]]] = {
    "manylinux_2_17": {"GLIBC": (2, 17), "GLIBCXX": (3, 4, 19), "CXXABI": (1, 3, 7),
                       "GCC": (4, 8, 0)},
    "manylinux_2_24": {"GLIBC": (2, 24), "GLIBCXX": (3, 4, 22), "CXXABI": (1, 3, 10),
                       "GCC": (4, 8, 0)},
    "manylinux_2_27": {"GLIBC": (2, 27), "GLIBCXX": (3, 4, 24), "CXXABI": (1, 3, 11),
                       "GCC": (7, 0, 0)},
    "manylinux_2_28": {"GLIBC": (2, 28), "GLIBCXX": (3, 4, 24), "CXXABI": (1, 3, 11),
                       "GCC": (7, 0, 0)},
}

#: Libraries every manylinux policy lets a wheel expect on the system (those a C++ plugin uses).
SYSTEM_LIBRARIES = frozenset({
    "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0",
    "libdl.so.2", "librt.so.1",
})
#: TensorFlow's framework library: loaded by TensorFlow before it loads the plugin.
TENSORFLOW_LIBRARIES = frozenset({"libtensorflow_framework.so.2"})

_VERSION = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_(\d+(?:\.\d+)*)$")


def plugin_needs(so: Path) -> tuple[set[str], dict[str, tuple[int, ...]]]:
    """The libraries ``so`` names and the newest version it requires per symbol namespace.

    Raises:
        OSError: no ``objdump``, or it cannot read the file.
    """
    objdump = shutil.which("objdump")
    if objdump is None:
        raise OSError("objdump (binutils) is not on PATH")
    out = subprocess.run([objdump, "-p", str(so)], capture_output=True, text=True)
    if out.returncode != 0:
        raise OSError(f"objdump -p {so} failed: {out.stderr.strip()}")
    libraries = set(re.findall(r"^\s*NEEDED\s+(\S+)", out.stdout, re.M))
    newest: dict[str, tuple[int, ...]] = {}
    for token in re.findall(r"\s(\S+)\s*$", out.stdout, re.M):
        m = _VERSION.match(token)
        if m:
            version = tuple(int(x) for x in m.group(2).split("."))
            newest[m.group(1)] = max(newest.get(m.group(1), ()), version)
    return libraries, newest


def platform_tag(so: Path) -> tuple[str, str]:
    """The wheel platform tag for a wheel that carries ``so``, and why (for the build log)."""
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    if plat != "linux_x86_64":
        return plat, f"built on {plat}: no manylinux policy is checked there"
    try:
        libraries, newest = plugin_needs(so)
    except OSError as exc:
        return plat, f"cannot read what {so.name} needs ({exc})"
    foreign = sorted(libraries - SYSTEM_LIBRARIES - TENSORFLOW_LIBRARIES)
    if foreign:
        return plat, f"{so.name} links {', '.join(foreign)}, which no manylinux policy provides"
    needs = ", ".join(f"{k}_{'.'.join(map(str, v))}" for k, v in sorted(newest.items()))
    for policy, allowed in MANYLINUX_X86_64.items():
        if all(ns in allowed and version <= allowed[ns] for ns, version in newest.items()):
            return f"{policy}_x86_64", f"{so.name} needs at most {needs}"
    return plat, f"{so.name} needs {needs}, newer than every manylinux policy known here"
