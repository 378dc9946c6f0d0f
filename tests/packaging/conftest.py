"""Fixtures of the release tests: the sdist and wheel built once, and a fresh virtual environment
that installs the wheel the way a user's machine does, with no JDK and no C++ compiler on PATH.

The environment grows in stages, in the order the tests of test_wheel.py use them: the core
wheel alone (no Spark, no TensorFlow), then ``[spark]``, then ``[tensorflow]``. uv's pip
interface installs from the wheel and the wheel's own dependency metadata, as pip would, with
the cache that ``make setup`` filled (pyspark is an sdist: the cache holds its built wheel); a
constraints file of this test environment's versions keeps the resolution on what the cache
already holds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Programs a user's machine lacks: a JDK's compiler, C and C++ compilers.
HIDDEN = re.compile(
    r"^(javac.*|.*g\+\+.*|.*gcc.*|c\+\+|cc|clang.*|.*-linux-gnu-(g\+\+|gcc|c\+\+).*)$"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the tests of this directory ``packaging``: they build and install the artifacts
    (minutes), so the fast inner loop leaves them out."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker("packaging")


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path
    log: str


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> Dist:
    """``python -m build`` of this checkout: one sdist and one wheel, built once per session.

    Without isolation, in this environment (which has pyspark for javac and TensorFlow for the
    plugin), as the README's release steps say.
    """
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    sdists = sorted(out.glob("*.tar.gz"))
    wheels = sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return Dist(sdists[0], wheels[0], result.stdout + result.stderr)


@dataclass
class WheelEnv:
    """A virtual environment with the wheel installed, and the environment to run it in."""

    venv: Path
    env: dict[str, str]
    wheel: Path
    constraints: Path
    tool_log: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def install(self, requirement: str) -> None:
        """Installs *requirement* into the venv, from the wheel, the cache and PyPI."""
        result = subprocess.run(
            [sys.executable, "-m", "uv", "pip", "install", "--python", self.python, "--quiet",
             "--constraint", str(self.constraints), requirement],
            capture_output=True, text=True, timeout=1200, env=self.env,
        )
        assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
        self.assert_no_build_tool_ran()

    def installed(self) -> set[str]:
        """The distribution names installed in the venv (lower case)."""
        result = subprocess.run(
            [self.python, "-c",
             "import importlib.metadata as m; "
             "print('\\n'.join(sorted({d.metadata['Name'].lower() for d in m.distributions()})))"],
            capture_output=True, text=True, timeout=120, env=self.env, check=True,
        )
        return set(result.stdout.split())

    def run(self, argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
        """Runs a program of the venv (``python``, ``tfrecord-io``) in ``cwd``; fails loudly."""
        program = argv[0] if os.path.isabs(argv[0]) else str(self.venv / "bin" / argv[0])
        result = subprocess.run([program, *argv[1:]], capture_output=True, text=True,
                                timeout=timeout, env=self.env, cwd=cwd)
        assert result.returncode == 0, (
            f"{argv} exited {result.returncode}\n--- stdout\n{result.stdout[-3000:]}"
            f"\n--- stderr\n{result.stderr[-6000:]}"
        )
        self.assert_no_build_tool_ran()
        return result

    def assert_no_build_tool_ran(self) -> None:
        calls = self.tool_log.read_text() if self.tool_log.exists() else ""
        assert calls == "", f"a hidden build tool was called: {calls}"


def _tools_without_compilers(bin_dir: Path, log: Path) -> None:
    """Fills *bin_dir* with a symlink to every program on PATH but the hidden ones; those get a
    script that records its call in *log* and fails, as a missing program would."""
    bin_dir.mkdir()
    seen: set[str] = set()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not os.path.isdir(directory):
            continue
        if os.path.isfile(os.path.join(directory, "..", "pyvenv.cfg")):
            continue  # another virtual environment's bin/ (an activated one): not the machine's
        for entry in sorted(os.listdir(directory)):
            if entry in seen:
                continue
            path = os.path.join(directory, entry)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                continue
            seen.add(entry)
            target = bin_dir / entry
            if HIDDEN.match(entry):
                target.write_text(
                    "#!/bin/sh\n"
                    f'echo "{entry} $*" >> "{log}"\n'
                    f'echo "{entry}: not installed on this machine" >&2\n'
                    "exit 127\n"
                )
                target.chmod(0o755)
            else:
                target.symlink_to(path)


@pytest.fixture(scope="package")
def wheel_env(dist, tmp_path_factory) -> Iterator[WheelEnv]:
    """A fresh venv (no system site packages) with the wheel installed without extras, on a PATH
    where javac, g++ and the other compilers fail. Extras are added by the fixtures below.
    Removed when the directory's tests end (with TensorFlow, it holds gigabytes)."""
    base = tmp_path_factory.mktemp("wheel-venv")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    log = base / "build-tools-called.log"
    tools = base / "bin"
    _tools_without_compilers(tools, log)
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAVA_HOME", "CC", "CXX", "PYTHONPATH", "VIRTUAL_ENV", "PYSPARK_PYTHON",
                        "PYSPARK_DRIVER_PYTHON", "TFRECORD_IO_JAR", "TFRECORD_IO_TF_PLUGIN",
                        "TFRECORD_IO_SPARK_JARS", "PYTHONSAFEPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{tools}"
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    constraints = base / "constraints.txt"
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable",
         "--disable-pip-version-check"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout
    constraints.write_text("".join(
        line + "\n" for line in frozen.splitlines()
        if "==" in line and not line.lower().startswith(("tfrecord-io", "tfrecord_io"))
    ))
    wheel_env = WheelEnv(venv, env, dist.wheel, constraints, log)
    wheel_env.install(str(dist.wheel))
    yield wheel_env
    shutil.rmtree(venv, ignore_errors=True)


@pytest.fixture(scope="package")
def wheel_env_spark(wheel_env) -> WheelEnv:
    """The wheel's venv with ``tfrecord-io[spark]``."""
    wheel_env.install(f"{wheel_env.wheel}[spark]")
    return wheel_env


@pytest.fixture(scope="package")
def wheel_env_tensorflow(wheel_env) -> WheelEnv:
    """The wheel's venv with ``tfrecord-io[tensorflow]``."""
    wheel_env.install(f"{wheel_env.wheel}[tensorflow]")
    return wheel_env

