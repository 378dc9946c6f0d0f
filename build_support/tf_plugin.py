"""Compiles TensorFlow's ``hdfs://`` file system plugin, ``tfrecord_io/_native/tf_filesystem.cc``.

Built when TensorFlow is installed in the Python that runs the build (g++ against the headers
and ``libtensorflow_framework.so.2`` of that TensorFlow); without TensorFlow, or without a C++
compiler, the plugin is left out with a notice and ``tfrecord_io.tf`` falls back to its Python
reader for HDFS.

Environment:
  CXX    the C++ compiler (else g++ on PATH)
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from build_support import BuildError
from build_support.versions import ROOT

__all__ = ["PLUGIN_RELPATH", "find_tensorflow", "make_tf_plugin"]

PLUGIN_SRC = ROOT / "tfrecord_io" / "_native" / "tf_filesystem.cc"
PLUGIN_RELPATH = Path("tfrecord_io") / "_native" / "libtfrecord_io_tf_filesystem.so"


def find_tensorflow() -> Path | None:
    """The installed TensorFlow package directory (with include/ and the framework library)."""
    spec = importlib.util.find_spec("tensorflow")
    for location in (spec.submodule_search_locations or []) if spec else []:
        tf_dir = Path(location)
        header = tf_dir / "include" / "tensorflow" / "c" / "experimental" / "filesystem"
        if (header / "filesystem_interface.h").is_file() and any(
            tf_dir.glob("libtensorflow_framework.so*")
        ):
            return tf_dir
    return None


def make_tf_plugin(out: Path) -> Path | None:
    """Compiles the TensorFlow file system plugin; None (with a notice) when it cannot be."""
    tf_dir = find_tensorflow()
    if tf_dir is None:
        print("tfrecord-io: TensorFlow is not installed in the Python that runs this build "
              f"({sys.executable}), so its hdfs:// file system plugin is not built and "
              "tfrecord_io.tf will read HDFS with its Python reader. To get the plugin, install "
              "TensorFlow first and build without isolation (`pip install --no-build-isolation "
              "...`, `python -m build --no-isolation`): an isolated build environment has no "
              "TensorFlow.", flush=True)
        return None
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        print("tfrecord-io: no C++ compiler (g++) found, so TensorFlow's hdfs:// file system "
              "plugin is not built.", flush=True)
        return None
    libs = sorted(tf_dir.glob("libtensorflow_framework.so*"), key=lambda p: len(p.name))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    cmd = [
        cxx, "-shared", "-fPIC", "-O2", "-std=c++17", "-D_GLIBCXX_USE_CXX11_ABI=1",
        "-Wall", "-Werror",
        "-I", str(tf_dir / "include"),
        "-o", str(tmp), str(PLUGIN_SRC),
        # The framework library is already loaded when TensorFlow loads the plugin; linking to
        # it by soname resolves TF_SetStatus & co. there.
        "-L", str(tf_dir), f"-l:{libs[-1].name}",
    ]
    print(f"tfrecord-io: compiling the TensorFlow file system plugin against {tf_dir}",
          flush=True)
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(
            "tfrecord-io: compiling the TensorFlow plugin failed:\n" + " ".join(cmd) + "\n"
            + result.stdout + result.stderr
        )
    os.replace(tmp, out)
    print(f"tfrecord-io: wrote {out}", flush=True)
    return out
