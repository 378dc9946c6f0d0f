"""Packaging of tfrecord-io; the builds themselves are in ``build_support/`` (not shipped).

The package metadata lives in pyproject.toml. This file hooks two builds into setuptools
(:mod:`build_support.jar`, :mod:`build_support.tf_plugin`):

* in a wheel build (``pip install .``, ``python -m build``) the jar and the TensorFlow plugin
  are written into build_lib, so they land in the wheel as package data;
* in an editable install (``pip install --no-build-isolation -e .``) they are written into the
  source tree (gitignored), where the editable package finds them.

``python setup.py -q build_jar`` rebuilds just the jar in the source tree (``make jar``),
``python setup.py -q build_tf_plugin`` just the plugin (``make tf-plugin``).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # build_support/, next to this file

from build_support import BuildError  # noqa: E402
from build_support.jar import JAR_RELPATH, make_jar  # noqa: E402
from build_support.tf_plugin import PLUGIN_RELPATH, make_tf_plugin  # noqa: E402


def _make_jar_or_exit(out: Path) -> None:
    # SystemExit, not an exception: setuptools' editable install catches exceptions raised by
    # build_py, prints a warning and goes on without the jar.
    try:
        make_jar(out)
    except BuildError as exc:
        raise SystemExit(f"\nerror: {exc}\n") from None
    except Exception as exc:  # noqa: BLE001 - anything else is as fatal
        raise SystemExit(f"\nerror: tfrecord-io: building {out} failed: {exc!r}\n") from exc


def _make_plugin_or_exit(out: Path) -> None:
    try:
        make_tf_plugin(out)
    except BuildError as exc:
        raise SystemExit(f"\nerror: {exc}\n") from None


class build_py(_build_py):
    """build_py that also builds the jar and the TensorFlow plugin (into build_lib, or the source
    tree if editable)."""

    def run(self):
        if getattr(self, "editable_mode", False):
            _make_jar_or_exit(ROOT / JAR_RELPATH)
            _make_plugin_or_exit(ROOT / PLUGIN_RELPATH)
            super().run()
        else:
            super().run()
            # After the copy of package data, so a stale jar left in the source tree by an
            # editable install never wins over the fresh one.
            _make_jar_or_exit(Path(self.build_lib) / JAR_RELPATH)
            _make_plugin_or_exit(Path(self.build_lib) / PLUGIN_RELPATH)

    def get_outputs(self, include_bytecode=True):
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            for rel in (JAR_RELPATH, PLUGIN_RELPATH):
                built = Path(self.build_lib) / rel
                if (rel == JAR_RELPATH or built.is_file()) and str(built) not in outputs:
                    outputs.append(str(built))
        return outputs


class build_jar(Command):
    """`python setup.py -q build_jar`: (re)build only the jar, in the source tree."""

    description = "compile jvm/src/main/java into tfrecord_io/jars/tfrecord-io.jar"
    user_options = [("output=", "o", f"where to write the jar (default {JAR_RELPATH})")]

    def initialize_options(self):
        self.output = None

    def finalize_options(self):
        self.output = Path(self.output) if self.output else ROOT / JAR_RELPATH

    def run(self):
        _make_jar_or_exit(self.output)


class build_tf_plugin(Command):
    """`python setup.py -q build_tf_plugin`: (re)build only the TensorFlow plugin, in place."""

    description = f"compile tfrecord_io/_native/tf_filesystem.cc into {PLUGIN_RELPATH}"
    user_options = []

    def initialize_options(self):
        pass

    def finalize_options(self):
        pass

    def run(self):
        _make_plugin_or_exit(ROOT / PLUGIN_RELPATH)


def _readme() -> dict:
    # pyproject.toml lists "readme" as dynamic so that the build works before README.md exists.
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else "tfrecord-io\n"
    return {"long_description": text, "long_description_content_type": "text/markdown"}


# setuptools' notice that an editable install maps a same-named folder: that is the point here.
warnings.filterwarnings("ignore", message="Editable installation")

setup(
    cmdclass={"build_py": build_py, "build_jar": build_jar, "build_tf_plugin": build_tf_plugin},
    **_readme(),
)
