"""Spark's Python daemon with TensorFlow already imported: warm cluster nodes.

Set ``spark.python.daemon.module=tfrecord_io.cluster.daemon`` (see :data:`SPARK_CONF`) and each
executor's Python daemon, the process Spark forks its Python workers from, imports TensorFlow
once when the executor runs its first Python task. Every worker is then forked with TensorFlow
in memory, and a cluster node starts by forking its Spark task's worker
(:mod:`tfrecord_io.cluster.task`) instead of starting a new interpreter that imports TensorFlow
again: a node starts in well under a second instead of the seconds to minutes TensorFlow's import
takes, for every attempt, gang restart and ``cluster.run`` of the application. Workers that run
``ml.predict`` and other TensorFlow UDFs find it imported too.

TensorFlow reads some of its settings from the environment when it is imported
(``TF_CPP_MIN_LOG_LEVEL``, ``TF_ENABLE_ONEDNN_OPTS``, ...). A node whose environment gives any
of those ``TF_*`` variables another value than the daemon had starts a new interpreter as
without this daemon, so what it asks for holds. Two are the node's own: ``TF_CONFIG``, which
TensorFlow reads when the node builds its strategy, and ``TF_USE_LEGACY_KERAS``, which decides
two things: which Keras ``tf.keras`` loads on first use, and where ``tensorflow.keras`` is
imported from. The daemon imports both Keras packages (``keras`` and, when installed,
``tf_keras``) without resolving ``tf.keras``, and a forked node points ``tensorflow.keras`` at
the one its environment asks for (:func:`prepare_node`), as TensorFlow's import would have.
Without TensorFlow, the daemon is Spark's own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping

from tfrecord_io.tf import runtime

__all__ = ["SPARK_CONF", "preloaded", "matches", "prepare_node"]

#: The Spark setting that makes executors use this daemon.
SPARK_CONF = {"spark.python.daemon.module": __name__}

#: Variables of the environment a node sets for itself, that TensorFlow reads only later.
_LATE_TF_VARIABLES = frozenset({"TF_CONFIG", "TF_USE_LEGACY_KERAS"})


_preload_environment: dict[str, str] | None = None


def _tf_variables(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items()
            if k.startswith("TF_") and k not in _LATE_TF_VARIABLES}


def preloaded() -> bool:
    """Whether this process is (a fork of) the daemon and has TensorFlow imported."""
    return _preload_environment is not None and "tensorflow" in sys.modules


def matches(environ: Mapping[str, str]) -> bool:
    """Whether a process forked from here with *environ* behaves as a new interpreter would.

    True when TensorFlow was preloaded with the same ``TF_*`` variables (but ``TF_CONFIG`` and
    ``TF_USE_LEGACY_KERAS``), has not run anything in this worker yet (a worker that ran
    ``ml.predict``, say, has TensorFlow's threads, which a fork would lack: its node would
    hang in its first op), and the Keras that *environ* asks for is imported and not yet
    bound to ``tf.keras`` (a worker that used ``tf.keras`` keeps the Keras it bound).
    """
    if not preloaded() or _tf_variables(environ) != _preload_environment:
        return False
    if runtime.tensorflow_running():
        return False
    return runtime.keras_available(runtime.wants_legacy_keras(environ))


def prepare_node() -> None:
    """In a node forked from here, once its environment is set: ``tensorflow.keras`` is imported
    from the Keras package ``TF_USE_LEGACY_KERAS`` asks for, as TensorFlow's import would have
    arranged. ``tf.keras`` itself reads the variable when first used."""
    runtime.point_keras_imports(runtime.wants_legacy_keras(os.environ))


def _preload() -> None:
    global _preload_environment  # set once, before the daemon forks
    started = time.monotonic()
    try:
        # Sets the nodes' default first: quiet C++ logging (TF_CPP_MIN_LOG_LEVEL=2).
        tf = runtime.import_tensorflow()
        # Both Keras packages; tf.keras stays unbound until a node (or a task) uses it.
        runtime.preload_keras()
    except Exception as e:  # noqa: BLE001 - without TensorFlow this is Spark's own daemon
        print(f"tfrecord_io.cluster.daemon: TensorFlow not preloaded: {e!r}", file=sys.stderr)
        return
    _preload_environment = _tf_variables(os.environ)
    print(f"tfrecord_io.cluster.daemon: TensorFlow {tf.__version__} preloaded in "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr)


def _main() -> None:
    _preload()
    from pyspark import daemon  # noqa: PLC0415 - once TensorFlow is preloaded

    daemon.manager()


if __name__ == "__main__":
    # Run as a script, this file is ``__main__``: the state lives in the imported module, where
    # the workers' tasks look.
    from tfrecord_io.cluster import daemon as _daemon

    _daemon._main()  # noqa: SLF001 - this very module
