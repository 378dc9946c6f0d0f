"""A missing optional dependency names the extra that installs it (tfrecord_io.extras).

Absence is simulated the way Python itself blocks an import: ``sys.modules[name] = None``.
"""

from __future__ import annotations

import sys

import pytest

from tfrecord_io import extras
from tfrecord_io.errors import MissingDependencyError, TFRecordError


def block(monkeypatch: pytest.MonkeyPatch, top: str) -> None:
    """Make *top* and its submodules unimportable for the rest of the test."""
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, top, None)


@pytest.mark.parametrize(("module", "extra"), sorted(extras.EXTRAS.items()))
def test_require_names_the_extra_that_installs_a_missing_module(monkeypatch, module, extra):
    block(monkeypatch, module)
    with pytest.raises(MissingDependencyError) as caught:
        extras.require(module, "this feature")
    assert caught.value.module == module and caught.value.extra == extra
    assert str(caught.value) == (
        f"this feature needs the Python module {module!r}, which is not installed: "
        f"pip install 'tfrecord-io[{extra}]'"
    )


def test_a_missing_dependency_is_an_import_error_and_a_tfrecord_error(monkeypatch):
    block(monkeypatch, "pyspark")
    with pytest.raises(ImportError) as caught:
        extras.require("pyspark.sql")
    assert isinstance(caught.value, TFRecordError) and caught.value.name == "pyspark"


def test_a_missing_dependency_error_pickles_whole(monkeypatch):
    import pickle

    block(monkeypatch, "tensorflow")
    with pytest.raises(MissingDependencyError) as caught:
        extras.require("tensorflow", "tfrecord_io.tf")
    back = pickle.loads(pickle.dumps(caught.value))
    assert (back.module, back.extra, str(back)) == ("tensorflow", "tensorflow", str(caught.value))


def test_require_returns_the_module_when_it_is_installed():
    assert extras.require("pyspark.sql").__name__ == "pyspark.sql"


def test_a_missing_submodule_of_an_installed_dependency_is_not_blamed_on_the_extra():
    with pytest.raises(ModuleNotFoundError) as caught:
        extras.require("pyspark.no_such_module")
    assert not isinstance(caught.value, MissingDependencyError)


def test_require_refuses_a_module_that_is_no_optional_dependency():
    with pytest.raises(ValueError, match="not an optional dependency"):
        extras.require("numpy")


def test_spark_session_without_pyspark_says_to_install_the_spark_extra(monkeypatch):
    from tfrecord_io import spark as tfs

    block(monkeypatch, "pyspark")
    with pytest.raises(MissingDependencyError, match=r"pip install 'tfrecord-io\[spark\]'"):
        tfs.session("local[1]")


def test_ml_estimator_and_model_without_pyspark_say_to_install_the_spark_extra(monkeypatch):
    from tfrecord_io import ml

    block(monkeypatch, "pyspark")
    for name in ("TFModel", "TFEstimator"):
        with pytest.raises(MissingDependencyError, match=r"pip install 'tfrecord-io\[spark\]'"):
            getattr(ml, name)


def test_tf_dataset_without_tensorflow_says_to_install_the_tensorflow_extra(
    monkeypatch, tmp_path
):
    from tfrecord_io import records
    from tfrecord_io import tf as tfr

    records.write(tmp_path / "a.tfrecord", [b"x"])
    block(monkeypatch, "tensorflow")
    with pytest.raises(MissingDependencyError, match=r"pip install 'tfrecord-io\[tensorflow\]'"):
        tfr.dataset(str(tmp_path / "a.tfrecord"))


def test_tensorboard_without_tensorboard_says_to_install_the_tensorboard_extra(
    monkeypatch, capsys, tmp_path
):
    from tfrecord_io.cluster import tensorboard

    block(monkeypatch, "tensorboard")
    assert tensorboard.main(["--logdir", str(tmp_path), "--host", "127.0.0.1"]) == 2
    assert "pip install 'tfrecord-io[tensorboard]'" in capsys.readouterr().out
