"""Packaging of tfrecord-io; the builds themselves are in ``build_support/`` (not shipped).

The package metadata lives in pyproject.toml. This file hooks two builds into setuptools
(:mod:`build_support.jar`, :mod:`build_support.tf_plugin`):

* in a wheel build (``pip install .``, ``python -m build``) the jar and the TensorFlow plugin
  are written into build_lib, so they land in the wheel as package data;
* in an editable install (``pip install --no-build-isolation -e .``) they are written into the
  source tree (gitignored), where the editable package finds them.

``python setup.py -q build_jar`` rebuilds just the jar in the source tree (``make jar``),
``python setup.py -q build_tf_plugin`` just the plugin (``make tf-plugin``).

Builds that reuse what another build made (a second environment of the same checkout, e.g.
``make setup``'s pyspark 3.5 one, whose jar must be the very jar of the first):

  TFRECORD_IO_JAR=PATH        take this jar instead of compiling one (no JDK needed)
  TFRECORD_IO_TF_PLUGIN=PATH  take this TensorFlow plugin instead of compiling one

A wheel that carries the TensorFlow plugin is tagged ``py3-none-<platform>``, the platform read
from the plugin (:mod:`build_support.wheel_tags`); one without it is ``py3-none-any``.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # build_support/, next to this file

from build_support import BuildError
from build_support.jar import JAR_RELPATH, make_jar
from build_support.tf_plugin import PLUGIN_RELPATH, make_tf_plugin
from build_support.wheel_tags import platform_tag


def _take_prebuilt(variable: str, out: Path) -> bool:
    """Copies the file named by the environment variable *variable* to *out*; False if unset."""
    given = os.environ.get(variable)
    if not given:
        return False
    source = Path(given).resolve()
    if not source.is_file():
        raise SystemExit(f"\nerror: {variable}={given} is not a file\n")
    if source != out.resolve():
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out)
    print(f"tfrecord-io: {out} is {source} ({variable}), not rebuilt", flush=True)
    return True


def _make_jar_or_exit(out: Path) -> None:
    # SystemExit, not an exception: setuptools' editable install catches exceptions raised by
    # build_py, prints a warning and goes on without the jar.
    if _take_prebuilt("TFRECORD_IO_JAR", out):
        return
    try:
        make_jar(out)
    except BuildError as exc:
        raise SystemExit(f"\nerror: {exc}\n") from None
    except Exception as exc:
        raise SystemExit(f"\nerror: tfrecord-io: building {out} failed: {exc!r}\n") from exc


def _make_plugin_or_exit(out: Path) -> bool:
    """Builds (or takes) the plugin at *out*; False when this build leaves it out."""
    if _take_prebuilt("TFRECORD_IO_TF_PLUGIN", out):
        return True
    try:
        return make_tf_plugin(out) is not None
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
            plugin = Path(self.build_lib) / PLUGIN_RELPATH
            if not _make_plugin_or_exit(plugin):
                # Not built here: a plugin copied in from the source tree (an editable
                # install's, for some other TensorFlow) must not ship in this build.
                plugin.unlink(missing_ok=True)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            for rel in (JAR_RELPATH, PLUGIN_RELPATH):
                built = Path(self.build_lib) / rel
                if (rel == JAR_RELPATH or built.is_file()) and str(built) not in outputs:
                    outputs.append(str(built))
        return outputs


class bdist_wheel(_bdist_wheel):
    """bdist_wheel whose tags say where the wheel runs.

    Without the TensorFlow plugin the wheel is pure (``py3-none-any``: Python and a jar). With
    it, the wheel is ``py3-none-<platform>``: the plugin is loaded by TensorFlow, not imported by
    Python, so any Python 3 and no Python ABI; the platform is read from the plugin's ELF
    headers (:func:`build_support.wheel_tags.platform_tag`).
    """

    def run(self):
        # Build first (run_command runs a command once), then decide: whether the plugin was
        # built is known only now, and the install step below already depends on purity.
        if not self.skip_build:
            self.run_command("build")
        plugin = Path(self.get_finalized_command("build_py").build_lib) / PLUGIN_RELPATH
        self._plugin = plugin if plugin.is_file() else None
        self.root_is_pure = self._plugin is None
        if self._plugin is not None:
            self._platform, why = platform_tag(self._plugin)
            print(f"tfrecord-io: wheel platform {self._platform}: {why}", flush=True)
            # The install step puts the packages at the wheel's root (platlib) only for a
            # distribution that has native code; setuptools knows only extension modules.
            self.distribution.has_ext_modules = lambda: True
        super().run()

    def get_tag(self):
        if getattr(self, "_plugin", None) is None:
            return super().get_tag()
        return "py3", "none", self._platform


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
    cmdclass={
        "build_py": build_py,
        "bdist_wheel": bdist_wheel,
        "build_jar": build_jar,
        "build_tf_plugin": build_tf_plugin,
    },
    **_readme(),
)
