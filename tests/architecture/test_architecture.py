"""The architecture of docs/architecture.md, checked: import-linter's contracts (pyproject.toml),
ruff, and the rules no import graph shows (py4j handles, Java class names, exception types,
test modules importing each other).

Each checker is run on the code as it is (it must pass) and on a deliberate violation (it must
fail), so a checker that is misconfigured into passing everything fails here.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tfrecord_io"
PYPROJECT = ROOT / "pyproject.toml"
# The checkers, run by this interpreter (import-linter's command has no `python -m` form).
LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]
RUFF = [sys.executable, "-m", "ruff"]

# The contracts' names in pyproject.toml, by id.
LAYERS = "Data flows one way: bytes -> records -> Examples -> rows/tensors -> apps"
TENSORFLOW = "TensorFlow and Keras are imported only by tfrecord_io.tf.runtime"
SPARK = "Spark (pyspark, py4j) only in tfrecord_io.spark and the apps above it"
ML_API = "tfrecord_io.ml uses the cluster's public API (tfrecord_io.cluster), not its modules"
PRIVATE = "A private module (_name) is imported only inside its own package"
NODE_SIDE = "The node process (python -m tfrecord_io.cluster.node) loads node-side code only"
CONTRACTS = (LAYERS, TENSORFLOW, SPARK, ML_API, PRIVATE, NODE_SIDE)

# Attributes through which PySpark reaches the JVM (py4j handles), and the jar's class names:
# only the Spark layer, tfrecord_io/spark/, uses them.
PY4J_HANDLES = frozenset(
    {"_jvm", "_jsc", "_jdf", "_jrdd", "_jrdd_deserializer", "_jsparkSession", "_jconf", "_gateway"}
)
JAVA_CLASS = re.compile(r"org\.tfrecordio(\.\w+)+")
SPARK_LAYER = "tfrecord_io/spark/"

# Known uses outside the Spark layer: (file, name). "to remove" entries are violations still in
# the code; delete each when its code is fixed (the test fails on an entry that matches nothing).
JVM_ALLOWED = {
    # Not the jar: the test HDFS runs its own JVM (jvm/minihdfs) with this main class.
    ("tfrecord_io/testing/minihdfs/classpath.py", "org.tfrecordio.minihdfs.MiniHdfs"),
    # Nor this: the test YARN's own JVM (jvm/miniyarn).
    ("tfrecord_io/testing/miniyarn/classpath.py", "org.tfrecordio.miniyarn.MiniYarn"),
}

# Exception types defined outside errors.py: (file, class). To remove, each.
EXCEPTIONS_ALLOWED: set[tuple[str, str]] = set()


def _run(args: list[str], cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with pyproject.toml's contracts on the package under *root*."""
    return _run([*LINT_IMPORTS, "--config", str(PYPROJECT), "--no-cache"], root, root)


def _verdicts(output: str) -> dict[str, str]:
    """Each contract's KEPT or BROKEN, from lint-imports' summary (names may wrap lines)."""
    text = " ".join(output.split())
    found = {}
    for name in CONTRACTS:
        m = re.search(re.escape(name) + r" (KEPT|BROKEN)", text)
        found[name] = m.group(1) if m else "missing"
    return found


def _package_copy(tmp_path: Path) -> Path:
    """A copy of the package's Python sources under tmp_path (no jar, no plugin)."""

    def not_source(directory: str, names: list[str]) -> list[str]:
        return [
            n
            for n in names
            if n == "__pycache__" or not (n.endswith(".py") or Path(directory, n).is_dir())
        ]

    shutil.copytree(PACKAGE, tmp_path / "tfrecord_io", ignore=not_source)
    return tmp_path


# -- import-linter -------------------------------------------------------------------------


def test_the_import_contracts_hold():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _verdicts(done.stdout) == {name: "KEPT" for name in CONTRACTS}


@pytest.mark.parametrize(
    ("files", "broken"),
    [
        ({"fs/upward.py": "from tfrecord_io import records\n"}, LAYERS),
        ({"example/upward.py": "from tfrecord_io.tf import dataset\n"}, LAYERS),
        ({"unplaced.py": "PLACED = False\n"}, LAYERS),  # a new module must be given a layer
        ({"cluster/tensorflow_direct.py": "import tensorflow as tf\n"}, TENSORFLOW),
        ({"ml/keras_direct.py": "import keras\n"}, TENSORFLOW),
        ({"records/spark_below.py": "import pyspark\n"}, SPARK),
        ({"ml/cluster_module.py": "from tfrecord_io.cluster import driver\n"}, ML_API),
        (
            {
                "tf/_helper.py": "HELPER = 1\n",
                "cluster/helped.py": "from tfrecord_io.tf import _helper\n",
            },
            PRIVATE,
        ),
    ],
    ids=lambda v: "+".join(v) if isinstance(v, dict) else None,
)
def test_a_deliberate_violation_breaks_its_contract_only(tmp_path, files, broken):
    root = _package_copy(tmp_path)
    for module, source in files.items():
        (root / "tfrecord_io" / module).write_text(source, encoding="utf-8")
    done = _lint_imports(root)
    assert done.returncode == 1, done.stdout + done.stderr
    expected = {name: "BROKEN" if name == broken else "KEPT" for name in CONTRACTS}
    assert _verdicts(done.stdout) == expected


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("cluster/node.py", "from tfrecord_io.cluster import driver"),
        ("cluster/reporter.py", "from tfrecord_io.cluster.feed import schedule"),  # indirectly
        ("cluster/feed/server.py", "import py4j"),
    ],
)
def test_the_node_side_contract_breaks_when_a_node_module_imports_the_drivers_side(
    tmp_path, module, line
):
    root = _package_copy(tmp_path)
    path = root / "tfrecord_io" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n",
                    encoding="utf-8")
    done = _lint_imports(root)
    assert done.returncode == 1, done.stdout + done.stderr
    expected = {name: "BROKEN" if name == NODE_SIDE else "KEPT" for name in CONTRACTS}
    assert _verdicts(done.stdout) == expected


# -- ruff ----------------------------------------------------------------------------------


def test_ruff_finds_nothing():
    done = _run([*RUFF, "check", "--no-cache", "."], ROOT, ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_reports_a_blind_except_and_a_needless_noqa(tmp_path):
    bad = tmp_path / "tfrecord_io" / "bad.py"
    bad.parent.mkdir()
    bad.write_text(
        "def f() -> None:\n"
        "    try:\n"
        "        pass\n"
        "    except Exception:\n"
        "        pass\n"
        "\n"
        "\n"
        "X = 1  # noqa: BLE001\n",
        encoding="utf-8",
    )
    done = _run(
        [*RUFF, "check", "--no-cache", "--config", str(PYPROJECT), "--output-format", "concise",
         str(bad)],
        tmp_path,
        tmp_path,
    )
    assert done.returncode == 1
    assert "bad.py:4:12: BLE001" in done.stdout
    assert "bad.py:8:8: RUF100" in done.stdout


# -- the Spark layer: py4j handles and Java class names ------------------------------------


def jvm_uses(source: str) -> set[str]:
    """The py4j handles (``sc._jvm``, ``hasattr(df, "_jdf")``) and jar class names
    (``"org.tfrecordio.X"``) that *source* uses."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in PY4J_HANDLES:
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in PY4J_HANDLES or JAVA_CLASS.fullmatch(node.value):
                found.add(node.value)
    return found


def _package_files() -> list[tuple[str, str]]:
    return [
        (path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def test_only_the_spark_layer_reaches_the_jvm():
    found = {
        (name, use)
        for name, source in _package_files()
        if not name.startswith(SPARK_LAYER)
        for use in jvm_uses(source)
    }
    assert found == JVM_ALLOWED


def test_jvm_uses_are_found_in_attributes_names_and_class_strings():
    source = (
        "jsc = sc._jsc.sc()\n"
        "ok = hasattr(df, '_jdf')\n"
        "NAME = 'org.tfrecordio.spark.TFRecordDataFrames'\n"
        "DOC = 'the jar (org.tfrecordio.spark) reads it'\n"
    )
    assert jvm_uses(source) == {"_jsc", "_jdf", "org.tfrecordio.spark.TFRecordDataFrames"}


# -- errors.py -----------------------------------------------------------------------------


def exception_types(source: str) -> set[str]:
    """The classes *source* defines that derive from an exception (a builtin one, or any base
    named ``...Error``/``...Exception``/``...Warning``)."""

    def is_exception(base: ast.expr) -> bool:
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        builtin = getattr(builtins, name, None)
        return (isinstance(builtin, type) and issubclass(builtin, BaseException)) or name.endswith(
            ("Error", "Exception", "Warning")
        )

    return {
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef) and any(is_exception(b) for b in node.bases)
    }


def test_every_exception_type_is_in_errors_py():
    found = {
        (name, cls)
        for name, source in _package_files()
        if name != "tfrecord_io/errors.py"
        for cls in exception_types(source)
    }
    assert found == EXCEPTIONS_ALLOWED


def test_exception_types_are_found_by_their_bases():
    source = (
        "class A(ConnectionError): ...\n"
        "class B(errors.TFRecordError): ...\n"
        "class C(Protocol): ...\n"
        "class D(A, KeyError): ...\n"
    )
    assert exception_types(source) == {"A", "B", "D"}


# -- the test tree ---------------------------------------------------------------------------


def imported_test_modules(source: str) -> set[str]:
    """The test modules (``test_*``) that *source* imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(n for n in names if n.split(".")[-1].startswith("test_"))
    return found


def test_no_test_module_imports_another():
    found = {
        (path.relative_to(ROOT).as_posix(), imported)
        for path in sorted((ROOT / "tests").rglob("test_*.py"))
        for imported in imported_test_modules(path.read_text(encoding="utf-8"))
    }
    assert found == set()


def test_imports_of_test_modules_are_found_at_any_depth():
    source = (
        "from test_standalone_reservation import LATE\n"
        "import processes\n"
        "def helper():\n"
        "    import test_yarn_losses as losses\n"
        "from waiting import eventually\n"
    )
    assert imported_test_modules(source) == {"test_standalone_reservation", "test_yarn_losses"}
