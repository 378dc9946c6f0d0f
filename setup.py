"""Build of the tfrecord-io Python package, including its Hadoop jar.

The package metadata lives in pyproject.toml. What this file adds is the jar: every build
compiles ``jvm/src/main/java/**/*.java`` with the JDK's ``javac --release 11`` against the jars
that the installed pyspark ships (found with importlib, no network, no Maven), and packs the
classes, plus ``jvm/src/main/resources`` if there is one, into ``tfrecord_io/jars/tfrecord-io.jar``:

* in a wheel build (``pip install .``, ``python -m build``) the jar is written into build_lib, so
  it lands in the wheel as package data;
* in an editable install (``pip install --no-build-isolation -e .``) it is written into the
  source tree, ``tfrecord_io/jars/tfrecord-io.jar`` (gitignored), where the editable package
  finds it.

``python setup.py -q build_jar`` rebuilds just the jar in the source tree (``make jar``).

It also builds TensorFlow's ``hdfs://`` file system, ``tfrecord_io/_native/tf_filesystem.cc``, into
``tfrecord_io/_native/libtfrecord_io_tf_filesystem.so`` when TensorFlow is installed in the Python
that runs the build (g++ against the headers and ``libtensorflow_framework.so.2`` of that
TensorFlow; without TensorFlow, or without a C++ compiler, the plugin is left out with a notice and
``tfrecord_io.tf`` falls back to its Python reader for HDFS). ``python setup.py -q
build_tf_plugin`` rebuilds just the plugin in the source tree.

Environment:
  JAVA_HOME                  the JDK whose javac is used (else javac on PATH)
  TFRECORD_IO_SPARK_JARS     a directory of jars to compile against instead of pyspark's jars/
  CXX                        the C++ compiler for the TensorFlow plugin (else g++ on PATH)
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build_py import build_py as _build_py

ROOT = Path(__file__).resolve().parent
JAVA_SRC = ROOT / "jvm" / "src" / "main" / "java"
JAVA_RES = ROOT / "jvm" / "src" / "main" / "resources"
JAR_RELPATH = Path("tfrecord_io") / "jars" / "tfrecord-io.jar"
JAVA_RELEASE = 11
PLUGIN_SRC = ROOT / "tfrecord_io" / "_native" / "tf_filesystem.cc"
PLUGIN_RELPATH = Path("tfrecord_io") / "_native" / "libtfrecord_io_tf_filesystem.so"
# Fixed timestamp for every jar entry, so that the same classes give the same jar bytes.
ZIP_DATE = (2000, 1, 1, 0, 0, 0)


class BuildError(RuntimeError):
    pass


def _version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    m = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    return m.group(1) if m else "0"


def find_javac() -> str:
    candidates = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidates.append(str(Path(java_home) / "bin" / "javac"))
    on_path = shutil.which("javac")
    if on_path:
        candidates.append(on_path)
    for javac in candidates:
        if os.path.isfile(javac) and os.access(javac, os.X_OK):
            break
    else:
        raise BuildError(
            "tfrecord-io: javac not found, so the Hadoop jar cannot be built. Install a JDK "
            f"(version {JAVA_RELEASE} or newer, e.g. `apt-get install openjdk-17-jdk-headless`) "
            "and put its bin/ on PATH or set JAVA_HOME."
        )
    out = subprocess.run([javac, "-version"], capture_output=True, text=True)
    text = (out.stdout + out.stderr).strip()
    m = re.search(r"javac\s+(\d+)(?:\.(\d+))?", text)
    if not m:
        raise BuildError(f"tfrecord-io: could not tell the version of {javac}: {text!r}")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "javac 1.8.0_x"
        major = int(m.group(2))
    if major < JAVA_RELEASE:
        raise BuildError(
            f"tfrecord-io: {javac} is {text}; a JDK {JAVA_RELEASE} or newer is needed "
            f"(the jar is compiled with --release {JAVA_RELEASE})."
        )
    return javac


def find_spark_jars() -> Path:
    override = os.environ.get("TFRECORD_IO_SPARK_JARS")
    if override:
        jars = Path(override)
        if not any(jars.glob("*.jar")):
            raise BuildError(f"tfrecord-io: TFRECORD_IO_SPARK_JARS={override} holds no *.jar")
        return jars
    spec = importlib.util.find_spec("pyspark")
    if spec is None:
        raise BuildError(
            "tfrecord-io: pyspark is not installed in the Python that runs this build "
            f"({sys.executable}), and its jars (Hadoop's client API) are what the Java code is "
            "compiled against. Install pyspark first (`pip install pyspark`) and build with "
            "--no-build-isolation, or build with isolation, which installs it from "
            "pyproject.toml."
        )
    for location in spec.submodule_search_locations or []:
        jars = Path(location) / "jars"
        if any(jars.glob("hadoop-client-api-*.jar")):
            return jars
    raise BuildError(
        "tfrecord-io: the pyspark at "
        f"{list(spec.submodule_search_locations or [])} has no jars/hadoop-client-api-*.jar"
    )


def _jar_bytes_manifest(version: str) -> bytes:
    lines = [
        "Manifest-Version: 1.0",
        "Created-By: tfrecord-io setup.py",
        "Implementation-Title: tfrecord-io",
        f"Implementation-Version: {version}",
        "Implementation-Vendor: tfrecord-io",
        "Automatic-Module-Name: org.tfrecordio",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def _zip_add(zf: zipfile.ZipFile, name: str, data: bytes | None) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    if data is None:  # directory entry
        info.external_attr = (0o40755 << 16) | 0x10
        zf.writestr(info, b"", compress_type=zipfile.ZIP_STORED)
    else:
        info.external_attr = 0o100644 << 16
        zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)


def write_jar(out: Path, trees: list[Path], version: str) -> int:
    """Pack the files under each of ``trees`` into ``out``; returns the number of files."""
    entries: dict[str, Path] = {}
    for tree in trees:
        for path in sorted(tree.rglob("*")):
            if path.is_file():
                name = path.relative_to(tree).as_posix()
                if name.upper() == "META-INF/MANIFEST.MF":
                    continue
                entries[name] = path
    dirs = set()
    for name in entries:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]) + "/")
    dirs.discard("META-INF/")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        # The manifest first, as java.util.jar.JarInputStream expects.
        _zip_add(zf, "META-INF/", None)
        _zip_add(zf, "META-INF/MANIFEST.MF", _jar_bytes_manifest(version))
        for name in sorted(dirs | set(entries)):
            _zip_add(zf, name, None if name.endswith("/") else entries[name].read_bytes())
    os.replace(tmp, out)
    return len(entries)


def make_jar(out: Path) -> Path:
    sources = sorted(JAVA_SRC.rglob("*.java"))
    if not sources:
        raise BuildError(f"tfrecord-io: no Java sources under {JAVA_SRC}")
    javac = find_javac()
    spark_jars = find_spark_jars()
    with tempfile.TemporaryDirectory(prefix="tfrecord-io-javac-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        argfile = Path(tmp) / "sources.txt"
        # One quoted path per line: javac's @argfile syntax.
        argfile.write_text(
            "\n".join('"' + str(s).replace("\\", "\\\\") + '"' for s in sources) + "\n",
            encoding="utf-8",
        )
        cmd = [
            javac,
            "--release", str(JAVA_RELEASE),
            "-encoding", "UTF-8",
            "-g",
            "-proc:none",
            "-Xlint:all,-options,-serial,-processing,-path",
            "-cp", str(spark_jars / "*"),
            "-d", str(classes),
            f"@{argfile}",
        ]
        print(f"tfrecord-io: compiling {len(sources)} Java sources with {javac} "
              f"--release {JAVA_RELEASE} against {spark_jars}", flush=True)
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(
                "tfrecord-io: javac failed:\n" + result.stdout + result.stderr
            )
        if result.stderr.strip():
            print(result.stderr, file=sys.stderr, flush=True)
        trees = [classes] + ([JAVA_RES] if JAVA_RES.is_dir() else [])
        count = write_jar(out, trees, _version())
    print(f"tfrecord-io: wrote {out} ({count} files)", flush=True)
    return out


def _make_jar_or_exit(out: Path) -> None:
    # SystemExit, not an exception: setuptools' editable install catches exceptions raised by
    # build_py, prints a warning and goes on without the jar.
    try:
        make_jar(out)
    except BuildError as exc:
        raise SystemExit(f"\nerror: {exc}\n") from None
    except Exception as exc:  # noqa: BLE001 - anything else is as fatal
        raise SystemExit(f"\nerror: tfrecord-io: building {out} failed: {exc!r}\n") from exc


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
        print("tfrecord-io: TensorFlow is not installed here, so its hdfs:// file system plugin "
              "is not built (tfrecord_io.tf will read HDFS with its Python reader). Install "
              "TensorFlow first to get it.", flush=True)
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

    description = f"compile {PLUGIN_SRC.name} into {PLUGIN_RELPATH}"
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
