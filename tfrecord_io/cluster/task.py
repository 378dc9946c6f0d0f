"""The Spark side of a node: what one barrier task of the cluster's Spark job does.

:func:`make_task` returns the function given to ``rdd.barrier().mapPartitions``. Barrier task
*i* plays role *i*. It

1. registers with the driver over the control channel (:mod:`tfrecord_io.cluster.channel`)
   -- or, when it cannot connect within :data:`CONNECT_TIMEOUT`, tells the other tasks through
   the barrier's ``allGather`` (those that registered tell the driver) and returns saying so;
   with ``input_mode="spark"`` a fed node first binds its feed server's socket on the
   executor's address (listening at once) and names it in the registration; the node process
   inherits the socket and serves it (:mod:`tfrecord_io.cluster.feed.server`);
2. reserves a free port on its executor's address (a bound socket, which the node process
   inherits and holds until TensorFlow is about to bind the port) and exchanges ``host:port``
   with the other tasks through ``BarrierTaskContext.allGather``, which gives every node the
   cluster spec;
3. starts the node process (:mod:`tfrecord_io.cluster.node`; a fork of this worker when its
   daemon preloaded TensorFlow, :mod:`tfrecord_io.cluster.spawn`) in its own process group with
   ``TF_CONFIG``, ``TF_USE_LEGACY_KERAS=1`` (``keras="legacy"``), ``CUDA_VISIBLE_DEVICES`` (the
   task's ``gpu`` resources) and the user's ``env``; on the chief, TensorBoard too;
4. forwards the node's output lines to the driver, checks its heartbeats (a node silent for the
   run's ``heartbeat_timeout`` seconds is killed and reported frozen), sends its own heartbeats,
   and on the driver's "stop" or its own end kills the node's whole process group;
5. reports the outcome (the traceback, or the signal that killed it) and returns.

The task never raises for a node failure, so Spark does not retry the barrier stage: the driver
decides (``max_attempts``).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from tfrecord_io.cluster import growth, oom, spawn
from tfrecord_io.cluster import node as node_process
from tfrecord_io.cluster.channel import NodeConnection
from tfrecord_io.cluster.context import NODE_ENV, NODE_FILE
from tfrecord_io.cluster.description import AttemptDescription, NodeDescription
from tfrecord_io.cluster.messages import (
    Done,
    FailureKind,
    Grow,
    Heartbeat,
    Hello,
    Log,
    Report,
    Started,
    Stop,
    TensorBoard,
    encode,
    parse,
)
from tfrecord_io.cluster.reporter import REPORT_FD_ENV
from tfrecord_io.cluster.roles import Role, cluster_spec, tf_config
from tfrecord_io.errors import ChannelError

__all__ = ["make_task", "DRIVER_HEARTBEAT", "CONNECT_TIMEOUT"]

#: How long a task tries to connect to the driver's control channel before it gives up (and
#: returns, saying the driver is unreachable from its executor).
CONNECT_TIMEOUT = 10.0
#: How often the task tells the driver it is alive.
DRIVER_HEARTBEAT = 2.0
_STOP_GRACE = 3.0
_MAX_LINE = 16 * 1024  # bytes of an output line the driver gets (the rest is cut)
#: The last lines of a node's standard error that its failure carries when the node left no
#: traceback (killed by a signal, a crash of the runtime: TensorFlow's fatal errors say why there)
_STDERR_TAIL_LINES = 20
#: ... and at most this many characters of them (their end).
_STDERR_TAIL_CHARS = 4 * 1024
#: How a node fails without a traceback of its own: its standard error may say why.
_UNEXPLAINED = (FailureKind.KILLED, FailureKind.EXITED, FailureKind.SERVER_ENDED)


#: The file in a node's working directory naming the Spark task that made it (and removes it).
_OWNER_FILE = "task.json"
#: How the working directories of nodes start (the cluster's name: ``Cluster.name``).
_WORKDIR_PREFIX = "tfrecord-io-"


def _process_start(pid: int) -> str | None:
    """When process *pid* started (clock ticks since boot), or None: no such process, or no
    ``/proc``. With the pid, it names one process: pids are reused, start times are not."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _claim(workdir: str) -> None:
    """Name this task as *workdir*'s owner, for :func:`_sweep`."""
    owner = {"pid": os.getpid(), "start": _process_start(os.getpid()),
             "namespace": _pid_namespace()}
    with open(os.path.join(workdir, _OWNER_FILE), "w", encoding="utf-8") as f:
        json.dump(owner, f)


def _sweep(root: str) -> None:
    """Remove the nodes' working directories under *root* whose Spark task is gone: a task
    killed (its Python worker ended by a cancelled job, a lost or killed executor) never reaches
    its own cleanup, and its directory holds the node's description and ``main_fun``'s
    arguments. Only directories of a task of this pid namespace that no longer runs go; one
    whose owner is unknown (being made, another user's, another host's pids) stays."""
    namespace = _pid_namespace()
    if namespace is None:  # no /proc: owners cannot be told apart
        return
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if not entry.name.startswith(_WORKDIR_PREFIX):
                continue
            try:
                with open(os.path.join(entry.path, _OWNER_FILE), encoding="utf-8") as f:
                    owner = json.load(f)
                pid, start = int(owner["pid"]), owner["start"]
            except (OSError, ValueError, TypeError, KeyError):
                continue
            if owner.get("namespace") == namespace and start and _process_start(pid) != start:
                shutil.rmtree(entry.path, ignore_errors=True)


def _reserve_port(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.bind((host, 0))
    return sock


def _forward(stream: Any, name: str, conn: NodeConnection,
             tail: collections.deque[str] | None = None) -> None:
    """Send the node's output lines to the driver; a line longer than :data:`_MAX_LINE` bytes
    goes cut, and the rest of it is read and dropped (never held whole: a progress bar redrawn
    with ``\r`` is one line for as long as it runs). *tail*, when given, keeps the last lines
    sent (as many as it holds)."""
    rest = False  # reading the rest of a line already cut
    for raw in iter(lambda: stream.readline(_MAX_LINE + 1), b""):
        whole = raw.endswith(b"\n") or len(raw) <= _MAX_LINE
        if rest:
            rest = not whole
            continue
        line = raw[:_MAX_LINE].decode("utf-8", "replace").rstrip("\n")
        if not whole:
            line += " ...[cut]"
            rest = True
        if tail is not None:
            tail.append(line)
        with contextlib.suppress(ChannelError):
            conn.send(Log(stream=name, line=line))
    stream.close()


def _forward_reports(pipe: Any, conn: NodeConnection) -> None:
    """Forward the node's ``ctx.report`` records (JSON lines) to the driver."""
    with pipe:
        for line in pipe:
            try:
                report = parse({**json.loads(line), "type": Report.TYPE}, (Report,))
            except (ValueError, TypeError, ChannelError):
                continue
            try:
                conn.send(report)
            except ChannelError:
                return


def _kill_group(process: spawn.NodeProcess, grace: float) -> None:
    """SIGTERM to the node's process group, SIGKILL after *grace*, reap the leader."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _with_stderr(outcome: Done, tail: collections.deque[str]) -> Done:
    """*outcome* with the end of the node's standard error (*tail*) added to its error, when
    the node failed without a traceback of its own (killed by a signal, ended with an exit
    status): that is where a crash of the runtime says why (TensorFlow's ``Check failed``
    before its abort, a fatal Python error), and the driver's log may not show it."""
    if outcome.ok or outcome.traceback or outcome.kind not in _UNEXPLAINED or not tail:
        return outcome
    text = "\n".join(tail)
    if len(text) > _STDERR_TAIL_CHARS:
        text = "..." + text[-_STDERR_TAIL_CHARS:]
    return dataclasses.replace(
        outcome, error=f"{outcome.error}; its standard error ended with:\n{text}")


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} ({-returncode})"
    return f"exited with status {returncode}"


class _Node:
    """One running node process, supervised from the Spark task."""

    def __init__(
        self, description: AttemptDescription, role: Role, conn: NodeConnection, workdir: str
    ) -> None:
        self.description = description
        self.workdir = workdir
        self.role = role
        self.conn = conn
        self.stop_requested = threading.Event()
        self.value: bytes = b""  #: main_fun's return value, pickled (encode_value)
        self._oom: oom.OomWatch | None = None  # the node process's OOM kills, once started
        #: the last lines of the node process's standard error
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)

    def listen(self) -> None:
        """Reader of driver messages: "stop", or the driver going away, stops the node; "grow"
        leaves the node's grow file for ``main_fun``
        (:func:`~tfrecord_io.cluster.growth.announce`)."""
        try:
            while True:
                message = self.conn.receive()
                if isinstance(message, Stop):
                    break
                if isinstance(message, Grow):
                    growth.announce(self.workdir, message.workers)
        except (ChannelError, OSError, ValueError):
            pass
        self.stop_requested.set()

    def environment(
        self, node: NodeDescription, gpus: list[str]
    ) -> tuple[dict[str, str], int, int]:
        env = dict(os.environ)
        env.update(self.description.options.env)
        env["TF_CONFIG"] = json.dumps(node.tf_config)
        env[NODE_ENV] = self.role.name
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        if self.description.options.keras == "legacy":
            env["TF_USE_LEGACY_KERAS"] = "1"
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
        import tfrecord_io  # noqa: PLC0415 - the package itself, for its path

        root = os.path.dirname(os.path.dirname(os.path.abspath(tfrecord_io.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        read_fd, write_fd = os.pipe()
        env[node_process.HEARTBEAT_FD_ENV] = str(write_fd)
        return env, read_fd, write_fd

    def _report_pipe(self, env: dict[str, str]) -> tuple[int, int]:
        """The pipe of ``ctx.report``'s records (the node writes, the task forwards)."""
        read_fd, write_fd = os.pipe()
        env[REPORT_FD_ENV] = str(write_fd)
        return read_fd, write_fd

    def run(
        self, node: NodeDescription, gpus: list[str], port: socket.socket,
        feed_socket: socket.socket | None,
    ) -> Done:
        held: list[int] = []  # this task's pipe ends, until closed or handed to a reader
        unread: list[Any] = []  # the node's output streams, until a reader thread has them
        readers: list[threading.Thread] = []
        process: spawn.NodeProcess | None = None
        # TensorBoard starts (seconds to minutes) while the node is supervised: a stop, or the
        # node's end, is not kept waiting for it.
        boards: list[Any] = []  # the board, once it serves; or what its start raised
        ended = threading.Event()
        starting = None
        outcome = Done(ok=False, kind=FailureKind.RAISED, error="the task ended unexpectedly")
        try:  # whatever fails, once the node started (the driver gone at once, too), ends it
            env, beat_r, beat_w = self.environment(node, gpus)
            held += (beat_r, beat_w)
            report_r, report_w = self._report_pipe(env)
            held += (report_r, report_w)
            # The node holds the port (node.port_fd) until TensorFlow is about to bind it.
            fds = (beat_w, report_w, port.fileno())
            if feed_socket is not None:
                fds += (feed_socket.fileno(),)
            process = spawn.start_node(self.workdir, env, fds)
            unread += (process.stdout, process.stderr)
            for fd in (beat_w, report_w):  # the node's ends: its copies are open
                held.remove(fd)
                os.close(fd)
            port.close()  # the node's copy holds it now
            if feed_socket is not None:
                feed_socket.close()  # the node serves it now
            self._oom = oom.OomWatch(process.pid)
            unread.append(os.fdopen(report_r, "rb"))
            held.remove(report_r)
            for target, args in (
                (_forward, (process.stdout, "stdout", self.conn, None)),
                (_forward, (process.stderr, "stderr", self.conn, self.stderr_tail)),
                (_forward_reports, (unread[-1], self.conn)),
            ):
                reader = threading.Thread(target=target, args=args, daemon=True)
                reader.start()
                readers.append(reader)
                unread.remove(args[0])  # the reader closes it
            self.conn.send(Started(pid=process.pid))
            if self.description.options.tensorboard and self.role.is_chief:
                starting = threading.Thread(
                    target=self._start_board, args=(node, ended, boards), daemon=True)
                starting.start()
            outcome = self._supervise(process, beat_r, boards)
        finally:
            ended.set()
            if process is not None:
                _kill_group(process, _STOP_GRACE)
            port.close()
            for fd in held:
                os.close(fd)
            for stream in unread:
                stream.close()
            if starting is not None:
                starting.join()
            for board in boards:
                if not isinstance(board, BaseException):
                    board.stop()
            for t in readers:
                t.join(5.0)
        # Read to its end now (the group is gone): the last lines may say why it failed.
        return _with_stderr(outcome, self.stderr_tail)

    def launch(
        self, roles: list[Role], addresses: list[str], host: str, gpus: list[str],
        port: socket.socket, feed_socket: socket.socket | None, payload: bytes,
    ) -> Done:
        """Describe the node to its process, in its working directory, once the tasks gathered
        *addresses* (every node's ``host:port``, in task order), start it and supervise it
        (:meth:`run`). Ends at once when the driver said "stop" meanwhile, or when a task
        says instead of its address that it could not connect back to the driver."""
        unreachable = _unreachable_peer(addresses)
        if unreachable is not None:
            port.close()
            return Done(ok=False, kind=FailureKind.SPARK_JOB, error=unreachable)
        role = self.role
        spec_all = cluster_spec(roles, addresses)
        node = NodeDescription(
            attempt=self.description, role=role, cluster_spec=spec_all,
            tf_config=tf_config(spec_all, role), host=host, parent_pid=os.getpid(),
            feed_fd=feed_socket.fileno() if feed_socket is not None else None,
            port_fd=port.fileno(),
        )
        node.write(self.workdir)
        with open(os.path.join(self.workdir, NODE_FILE), "w", encoding="utf-8") as f:
            f.write(role.name)
        main_path = os.path.join(self.workdir, node_process.MAIN_FILE)
        with open(os.open(main_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(payload)
        if self.stop_requested.is_set():
            port.close()
            return Done(ok=True, stopped=True)
        return self.run(node, gpus, port, feed_socket)

    def _start_tensorboard(self, node: NodeDescription,
                           cancel: threading.Event | None = None) -> Any:
        from tfrecord_io.cluster import tensorboard  # noqa: PLC0415 - only with tensorboard=True

        # The nodes' settings (the driver's object-store settings, the run's env) reach it too:
        # it reads what they write.
        options = node.attempt.options
        board = tensorboard.start(options.log_dir, host=node.host,
                                  env={**os.environ, **options.env}, cancel=cancel)
        try:
            self.conn.send(TensorBoard(url=board.url))
        except BaseException:
            board.stop()
            raise
        return board

    def _start_board(self, node: NodeDescription, ended: threading.Event,
                     boards: list[Any]) -> None:
        """:meth:`_start_tensorboard` in a thread of its own: *boards* gets the board, or what
        its start raised (the task then fails with it, as if it had raised in the task)."""
        try:
            boards.append(self._start_tensorboard(node, ended))
        except BaseException as e:  # noqa: BLE001 - handed to the supervising thread
            if not ended.is_set():
                boards.append(e)

    def _supervise(self, process: spawn.NodeProcess, beat_r: int,
                   boards: list[Any] | None = None) -> Done:
        # The node beats every second; silent for the run's heartbeat_timeout, it is frozen.
        silence = self.description.options.heartbeat_timeout
        last_beat = time.monotonic()
        while True:
            if self.stop_requested.is_set():
                return Done(ok=True, stopped=True)
            failed = [b for b in boards or () if isinstance(b, BaseException)]
            if failed:
                raise failed[0]  # TensorBoard could not start
            ready, _, _ = select.select([beat_r], [], [], 0.5)
            now = time.monotonic()
            if ready:
                if os.read(beat_r, 4096):
                    last_beat = now
                else:  # EOF: the node process has ended (or is ending)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(10.0)
            if process.poll() is not None:
                return self._exited(process)
            if now - last_beat > silence:
                return Done(
                    ok=False, kind=FailureKind.SILENT,
                    error=f"sent no heartbeat for {silence:.0f} s (frozen or stopped "
                    f"process, pid {process.pid}); it was killed",
                )

    def _exited(self, process: spawn.NodeProcess) -> Done:
        code = process.returncode
        path = os.path.join(self.workdir, node_process.RESULT_FILE)
        result: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            with open(path, encoding="utf-8") as f:
                result = json.load(f)
        if code == 0 and result.get("ok") and result.get("resized"):
            return Done(ok=True, resized=True)
        if code == 0 and result.get("ok"):
            with contextlib.suppress(OSError):
                with open(os.path.join(self.workdir, node_process.VALUE_FILE), "rb") as f:
                    self.value = f.read()
            return Done(ok=True)
        if not self.role.runs_main and code == 0:
            return Done(ok=False, kind=FailureKind.SERVER_ENDED,
                        error="the server stopped serving on its own")
        if code == 0 and not result:
            return Done(
                ok=False, kind=FailureKind.EXITED,
                error=f"main_fun ended the node process (os._exit?) before returning: the node "
                f"process (pid {process.pid}) exited with status 0 and no result; return from "
                "main_fun (or raise) instead of ending its process",
            )
        if result.get("traceback"):
            return Done(ok=False, kind=FailureKind.RAISED, error=str(result.get("error", "")),
                        traceback=str(result["traceback"]))
        error = f"the node process (pid {process.pid}) {_describe_exit(code)}"
        cause = None
        if code == -signal.SIGKILL and self._oom is not None:
            cause = self._oom.cause()
        return Done(
            ok=False, kind=FailureKind.KILLED if code < 0 else FailureKind.EXITED,
            error=error if cause is None else f"{error}: {cause}",
        )


def _unreachable_peer(gathered: list[str]) -> str | None:
    """Why the cluster cannot start, when a task's share of the barrier's ``allGather`` says it
    could not connect back to the driver (a JSON object instead of ``host:port``), or None."""
    for item in gathered:
        if not item.startswith("{"):
            continue
        with contextlib.suppress(ValueError, TypeError, KeyError):
            peer = json.loads(item)
            return (f"{peer['node']} could not connect back to the driver's control channel at "
                    f"{peer['unreachable']} from its executor ({peer['error']}), so the cluster "
                    "cannot start: the executors must reach this address; give "
                    "cluster.run(control_host=...) or TFRECORD_IO_CONTROL_HOST an address of the "
                    "driver's machine that they can reach")
    return None


def _beat(conn: NodeConnection, stop: threading.Event) -> None:
    while not stop.wait(DRIVER_HEARTBEAT):
        try:
            conn.send(Heartbeat())
        except ChannelError:
            return


def make_task(
    description: AttemptDescription, roles: list[Role], payload: bytes
) -> Callable[[Iterator[Any]], Iterator[str]]:
    """The barrier task function of one attempt.

    Args:
        description: what every node of the attempt shares (with ``input_mode="spark"``, fed nodes
            bind a feed server's socket, report it in their registration and pass it to the
            node).
        roles: the roles, in task order.
        payload: ``cloudpickle.dumps((main_fun, args))``, written for the node process as is.
    """

    def task(_: Iterator[Any]) -> Iterator[str]:
        from pyspark import BarrierTaskContext  # noqa: PLC0415 - on the executor

        ctx = BarrierTaskContext.get()
        index = ctx.partitionId()
        role = roles[index]
        host = ctx.getTaskInfos()[index].address.rsplit(":", 1)[0]
        gpus = list(ctx.resources()["gpu"].addresses) if "gpu" in ctx.resources() else []
        # The node's feed server: bound here so that the driver learns its address with the
        # registration; the node process inherits the socket and listens on it.
        # It listens at once: the driver may connect before the node process accepts.
        fed = description.options.input_mode == "spark" and role.fed
        feed_socket = _reserve_port(host) if fed else None
        if feed_socket is not None:
            feed_socket.listen(64)
        hello = Hello(
            node=role.name, attempt=description.number, host=host, pid=os.getpid(), gpus=gpus,
            # Spark's id of this task: the driver finds the executor (and why it was lost) by it
            task=ctx.taskAttemptId(),
            container=os.environ.get("CONTAINER_ID") or None,  # on YARN: the executor's
            feed_server=f"{host}:{feed_socket.getsockname()[1]}" if feed_socket else None,
        )
        try:
            conn = NodeConnection(description.driver, description.control_key, hello,
                                  timeout=CONNECT_TIMEOUT)
        except (ChannelError, OSError) as e:
            # The driver cannot hear this node: say so in the job's result, at once (raising
            # would make Spark retry the stage for nothing).
            if feed_socket is not None:
                feed_socket.close()
            unreachable = {"node": role.name, "ok": False, "unreachable": description.driver,
                           "error": f"{type(e).__name__}: {e}"}
            # The tasks that did connect wait for this one in allGather: it tells them why it
            # will not come, and they tell the driver (the job's result reaches it only once
            # every task ended).
            with contextlib.suppress(Exception):
                ctx.allGather(json.dumps(unreachable))
            yield json.dumps(unreachable)
            return
        _sweep(tempfile.gettempdir())
        workdir = tempfile.mkdtemp(
            prefix=f"{description.cluster}-{role.job_name}-{role.task_index}-")
        with contextlib.suppress(OSError):  # unclaimed, it is only never swept
            _claim(workdir)
        state = _Node(description, role, conn, workdir)
        listener = threading.Thread(target=state.listen, name="cluster-driver", daemon=True)
        listener.start()
        beating = threading.Event()
        threading.Thread(
            target=_beat, args=(conn, beating), name="cluster-beat", daemon=True
        ).start()
        outcome: Done
        try:
            port = _reserve_port(host)
            address = f"{host}:{port.getsockname()[1]}"
            addresses = ctx.allGather(address)
            outcome = state.launch(roles, addresses, host, gpus, port, feed_socket, payload)
        except BaseException as e:  # noqa: BLE001 - reported to the driver, never to Spark
            outcome = Done(ok=False, kind=FailureKind.RAISED, error=f"the Spark task failed: {e!r}",
                           traceback=traceback.format_exc())
        finally:
            if feed_socket is not None:
                feed_socket.close()
            shutil.rmtree(workdir, ignore_errors=True)
            beating.set()
        with contextlib.suppress(ChannelError):
            conn.send(outcome, payload=state.value)
        conn.close()
        listener.join(5.0)
        yield json.dumps({"node": role.name, **encode(outcome)})

    return task
