"""The node process: ``python -m tfrecord_io.cluster.node WORKDIR``, started by the Spark task.

It runs in its own process group, with ``TF_CONFIG`` (and ``TF_USE_LEGACY_KERAS``,
``CUDA_VISIBLE_DEVICES``, the user's ``env``) already in its environment, so they are set before
TensorFlow is imported. It

1. dies with its parent: ``PR_SET_PDEATHSIG`` (SIGKILL), and a heartbeat thread that writes to
   a pipe the parent reads: when the parent is gone the write fails and the node kills its own
   process group; when the node freezes, the parent sees the heartbeats stop;
2. registers tfrecord-io's ``hdfs://`` file system in TensorFlow, and keeps the node's
   TensorFlow port (the socket its Spark task bound and passed down) until TensorFlow binds it
   (right before ``main_fun``, whose strategy binds it, or the bare server);
3. runs ``main_fun(args, ctx)`` (chief, sync-mode workers, evaluator; ``sys.exit(0)`` in it is
   a return of None, another code a failure) and writes the outcome to
   ``WORKDIR/result.json`` (the traceback on failure; ``resized`` when it left at a boundary
   for a larger gang, :class:`~tfrecord_io.errors.ResizeInterrupt`) -- with
   ``input_mode="spark"``, serving the node's feeds (:mod:`tfrecord_io.cluster.feed.server`,
   on the socket the Spark task bound) meanwhile and stopping them when ``main_fun`` ends --
   or serves a bare ``tf.distribute.Server`` (ps-mode ps and workers) until it is stopped:
   such a server cannot be stopped in-process, the process ends.

``WORKDIR/node.json`` holds the node's description
(:class:`~tfrecord_io.cluster.description.NodeDescription`), ``WORKDIR/main.pkl`` the user's
function and arguments, pickled by the Spark task that received them inside Spark's closure;
``main_fun``'s return value goes to ``WORKDIR/value.pkl``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

from tfrecord_io.cluster.description import NodeDescription
from tfrecord_io.errors import ResizeInterrupt
from tfrecord_io.extras import require

__all__ = [
    "main", "HEARTBEAT_FD_ENV", "HEARTBEAT_INTERVAL", "RESULT_FILE", "VALUE_FILE", "MAIN_FILE",
]

HEARTBEAT_FD_ENV = "TFRECORD_IO_HEARTBEAT_FD"
HEARTBEAT_INTERVAL = 1.0
MAIN_FILE = "main.pkl"
RESULT_FILE = "result.json"
VALUE_FILE = "value.pkl"
_PR_SET_PDEATHSIG = 1

log = logging.getLogger("tfrecord_io.cluster.node")


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the heartbeat pipe still catches it
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _heartbeat(fd: int) -> None:
    while True:
        try:
            os.write(fd, b".")
        except OSError:  # the parent (the Spark task) is gone: end the whole node
            os.killpg(0, signal.SIGKILL)
            os._exit(1)
        time.sleep(HEARTBEAT_INTERVAL)


def _write_result(workdir: str, result: dict[str, Any]) -> None:
    tmp = os.path.join(workdir, RESULT_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, os.path.join(workdir, RESULT_FILE))


def _release_port(node: NodeDescription) -> None:
    """Close the socket that held the node's TensorFlow port since its Spark task reserved it:
    TensorFlow binds the port next, in this process. (TensorFlow's gRPC server turns
    ``SO_REUSEPORT`` off, so no socket can hold the port while it binds; closing it here,
    after TensorFlow is imported, leaves another process only the moment before the bind.)"""
    if node.port_fd is not None:
        with contextlib.suppress(OSError):
            os.close(node.port_fd)


def _serve(node: NodeDescription) -> None:
    from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - the tf layer, after the feed server

    tf = import_tensorflow()
    role = node.role
    _release_port(node)
    server = tf.distribute.Server(
        tf.train.ClusterSpec(node.cluster_spec),
        job_name=role.job_name,
        task_index=role.task_index,
        protocol="grpc",
        start=True,
    )
    log.info("serving %s at %s", role.name, server.target)
    server.join()


def _feed_server(node: NodeDescription) -> Any:
    """The node's feed server on the socket the Spark task bound, or None (not fed)."""
    if node.feed_fd is None:
        return None
    from tfrecord_io.cluster.feed.server import FeedServer  # noqa: PLC0415 - only a fed node serves feeds

    return FeedServer(socket.socket(fileno=node.feed_fd), node.attempt.feed_key,
                      name=node.role.name, attempt=node.attempt.number)


def _run_main(workdir: str, node: NodeDescription, feed_server: Any) -> None:
    from pyspark import cloudpickle  # noqa: PLC0415 - only a node that runs main_fun

    from tfrecord_io.cluster.context import NodeContext  # noqa: PLC0415 - only a node that runs main_fun
    from tfrecord_io.cluster.reporter import REPORT_FD_ENV, Reporter  # noqa: PLC0415 - only a node that runs main_fun
    from tfrecord_io.cluster.results import encode_value  # noqa: PLC0415 - only a node that runs main_fun

    with open(os.path.join(workdir, MAIN_FILE), "rb") as f:
        main_fun, args = cloudpickle.load(f)
    fd = os.environ.get(REPORT_FD_ENV)
    reporter = Reporter(int(fd) if fd else None, node.role.name, node.attempt.number)
    ctx = NodeContext(node, feed_server=feed_server, reporter=reporter, workdir=workdir)
    _release_port(node)  # main_fun's strategy binds it (from TF_CONFIG)
    try:
        try:
            value = main_fun(args, ctx)
        except SystemExit as e:
            if e.code not in (0, None):
                raise
            value = None  # sys.exit(0) ends main_fun as a return does (returning None)
    except BaseException:
        if feed_server is not None:
            feed_server.close("failed")
        raise
    finally:
        reporter.close()
    if feed_server is not None:
        feed_server.close("finished")
    data = encode_value(value, node.role.name)
    tmp = os.path.join(workdir, VALUE_FILE + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(workdir, VALUE_FILE))


def _describe(e: BaseException) -> str:
    """*e* in one line for the driver, ``Type: message``; never raises (an exception whose
    ``__str__`` raises is described all the same: its traceback must still reach the driver).
    A SystemExit, whose message is only its code, is named as the call: ``main_fun called
    sys.exit(2)``."""
    try:
        if isinstance(e, SystemExit):
            return f"main_fun called sys.exit({e.code!r})"
        return f"{type(e).__name__}: {e}"
    except Exception:  # noqa: BLE001 - its __str__ (or its code's __repr__) raised
        pass
    try:  # copes with a failing __str__ ("<exception str() failed>")
        return traceback.format_exception_only(type(e), e)[-1].strip()
    except Exception:  # noqa: BLE001 - the type name is left
        return type(e).__name__


def main(argv: list[str] | None = None) -> int:
    """Entry of the node process (see the module docs). Returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    workdir = argv[0]
    node = NodeDescription.read(workdir)
    _die_with_parent(node.parent_pid)
    threading.Thread(
        target=_heartbeat, args=(int(os.environ[HEARTBEAT_FD_ENV]),), name="heartbeat", daemon=True
    ).start()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        # Serving at once (TensorFlow takes seconds to import): the driver may connect now.
        feed_server = _feed_server(node)
        from tfrecord_io import tf as tfr  # noqa: PLC0415 - the tf layer, after the feed server

        require("tensorflow", "a tfrecord_io.cluster node")
        if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
            require("tf_keras", "cluster.run(keras='legacy')")

        try:
            tfr.register_filesystems()
        except Exception as e:  # noqa: BLE001 - local-only programs can do without hdfs://
            log.warning("hdfs:// is not available in TensorFlow on this node: %s", e)
        if node.role.runs_main:
            _run_main(workdir, node, feed_server)
        else:
            _serve(node)
    except ResizeInterrupt:
        log.info("main_fun left at a boundary: the gang restarts with more workers")
        _write_result(workdir, {"ok": True, "resized": True})
        return 0
    except BaseException as e:  # noqa: BLE001 - reported to the driver, with the traceback
        text = traceback.format_exc()  # (cut to its end in the task's Done)
        error = _describe(e)
        _write_result(workdir, {"ok": False, "error": error, "traceback": text})
        sys.stderr.write(text)
        sys.stderr.flush()
        return 1
    _write_result(workdir, {"ok": True})
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    # os._exit: TensorFlow's threads (gRPC, collectives) must not delay or hang the exit.
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
