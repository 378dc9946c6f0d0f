"""Every message of the cluster's protocol, typed: built, parsed and checked here only.

The protocol (:mod:`tfrecord_io.cluster.protocol`, ``docs/protocol.md``) carries a JSON header
per message; this module is the one place that turns headers into values and back. Each
message type is a frozen dataclass whose fields are the header's members; :func:`encode` gives
the header of a message and :func:`parse` the message of a header, refusing (with
:class:`~tfrecord_io.errors.ChannelError`) a type the receiver does not expect, a missing
field, a field of the wrong type and any field the type does not have. A connection's
receiver names what it expects with one of the tuples below (``FROM_NODE_TASK``...), so a
message is only ever read where the protocol says it may arrive.

A node's outcome is a :class:`Done`; when it failed, its :class:`FailureKind` says how, and
the driver weighs failures by the kind's :attr:`~FailureKind.rank` (a killed or silent node
is likelier the cause than a peer that raised because of it), never by the words of the error.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from tfrecord_io.errors import ChannelError

__all__ = [
    "FailureKind",
    "MAX_ERROR",
    "MAX_TRACEBACK",
    "Message",
    "Hello",
    "Started",
    "Heartbeat",
    "Log",
    "TensorBoard",
    "Report",
    "Done",
    "Stop",
    "Grow",
    "DriverHello",
    "EndEpoch",
    "FailEpoch",
    "EndAll",
    "WithdrawEpoch",
    "Demand",
    "ReaderLeft",
    "Withdrawn",
    "Closing",
    "FeederHello",
    "Ready",
    "Stopped",
    "Batch",
    "End",
    "Ack",
    "CONTROL_HELLOS",
    "FROM_NODE_TASK",
    "FROM_DRIVER",
    "FEED_HELLOS",
    "FROM_DRIVER_LINK",
    "FROM_FEED_SERVER",
    "FROM_FEEDER",
    "TO_FEEDER",
    "ALL",
    "encode",
    "parse",
]


class FailureKind(enum.Enum):
    """How a node failed; :attr:`rank` orders candidate causes (lowest first)."""

    #: The node process was killed by a signal (out of memory, a kill by hand).
    KILLED = "killed"
    #: The node process or its whole host went silent: no heartbeat.
    SILENT = "silent"
    #: The node's Spark task lost its connection: its executor, container or host is gone.
    LOST = "lost"
    #: The node process ended with an exit status but no result (a crash of the runtime).
    EXITED = "exited"
    #: A ps or worker server stopped serving on its own.
    SERVER_ENDED = "server_ended"
    #: ``main_fun`` (or the node's Spark task) raised: the traceback says where.
    RAISED = "raised"
    #: The cluster's Spark job ended before every node finished.
    SPARK_JOB = "spark_job"

    @property
    def rank(self) -> int:
        """0 for a node that died or went silent (the likeliest cause of its peers' failures),
        1 for an exception, 2 for the Spark job ending."""
        if self is FailureKind.RAISED:
            return 1
        if self is FailureKind.SPARK_JOB:
            return 2
        return 0


@dataclass(frozen=True)
class Message:
    """A message of the protocol; subclasses set :attr:`TYPE` (the header's ``"type"``)."""

    TYPE: ClassVar[str] = ""
    #: Whether a payload may come with it.
    PAYLOAD: ClassVar[bool] = False


# -- the control channel ----------------------------------------------------------------------


@dataclass(frozen=True)
class Hello(Message):
    """A node's Spark task registers with the driver (its first message)."""

    TYPE: ClassVar[str] = "hello"
    node: str
    attempt: int
    host: str
    pid: int
    gpus: list[str]
    #: Spark's id of the task (the driver finds its executor by it).
    task: int | None = None
    #: The task's YARN container, on YARN.
    container: str | None = None
    #: The node's feed server, ``host:port`` (fed nodes only).
    feed_server: str | None = None


@dataclass(frozen=True)
class Started(Message):
    """The node process started."""

    TYPE: ClassVar[str] = "started"
    pid: int


@dataclass(frozen=True)
class Heartbeat(Message):
    """The task is alive."""

    TYPE: ClassVar[str] = "heartbeat"


@dataclass(frozen=True)
class Log(Message):
    """One line of the node process's output."""

    TYPE: ClassVar[str] = "log"
    stream: str
    line: str


@dataclass(frozen=True)
class TensorBoard(Message):
    """TensorBoard serves at *url* (from the chief's task)."""

    TYPE: ClassVar[str] = "tensorboard"
    url: str


@dataclass(frozen=True)
class Report(Message):
    """One ``ctx.report``."""

    TYPE: ClassVar[str] = "report"
    step: int | None
    time: float
    attempt: int
    values: dict[str, float]


#: The characters of a failure's error that a :class:`Done` carries (its start; the rest is cut).
MAX_ERROR = 8 * 1024
#: The characters of a failure's traceback that a :class:`Done` carries (its end, where it
#: raised). With :data:`MAX_ERROR`, a ``done`` header stays far below the protocol's limit
#: (``protocol.MAX_HEADER``) whatever the text, escapes included.
MAX_TRACEBACK = 64 * 1024


@dataclass(frozen=True)
class Done(Message):
    """The node's outcome; its payload is ``main_fun``'s return value (pickled) when *ok*."""

    TYPE: ClassVar[str] = "done"
    PAYLOAD: ClassVar[bool] = True
    ok: bool
    #: It ended because the driver said ``stop``.
    stopped: bool = False
    #: ``main_fun`` left at a boundary to let the gang restart larger (after ``grow``).
    resized: bool = False
    #: How it failed (when not *ok*).
    kind: FailureKind | None = None
    error: str | None = None
    traceback: str | None = None

    def __post_init__(self) -> None:
        # Bounded here, where every Done is made: a header over the protocol's limit would end
        # the connection, and the failure would reach the driver as a lost node.
        if isinstance(self.error, str) and len(self.error) > MAX_ERROR:
            object.__setattr__(self, "error", self.error[:MAX_ERROR] + " ...[cut]")
        if isinstance(self.traceback, str) and len(self.traceback) > MAX_TRACEBACK:
            object.__setattr__(self, "traceback", "...\n" + self.traceback[-MAX_TRACEBACK:])


@dataclass(frozen=True)
class Stop(Message):
    """The driver tells a node to stop."""

    TYPE: ClassVar[str] = "stop"


@dataclass(frozen=True)
class Grow(Message):
    """The driver tells a node that the application can place *workers* workers now (more
    than the attempt has): ``main_fun`` may leave at its next boundary for the gang to restart
    at that size (``ctx.resize_pending``)."""

    TYPE: ClassVar[str] = "grow"
    workers: int


# -- the feed: the driver's link to a node's feed server --------------------------------------


@dataclass(frozen=True)
class DriverHello(Message):
    """The driver's link opens (its first message)."""

    TYPE: ClassVar[str] = "driver"
    attempt: int


@dataclass(frozen=True)
class EndEpoch(Message):
    """Epoch *epoch* of *feed* has ended: *sent* records went to this node in it (None: the
    node stopped reading the feed, or the epoch was stopped short; nothing to check)."""

    TYPE: ClassVar[str] = "end_epoch"
    feed: str
    epoch: int
    sent: int | None


@dataclass(frozen=True)
class FailEpoch(Message):
    """Epoch *epoch* of *feed* failed: its reader raises *reason* (its first
    :data:`MAX_ERROR` characters: the driver raises the whole of it)."""

    TYPE: ClassVar[str] = "fail_epoch"
    feed: str
    epoch: int
    reason: str

    def __post_init__(self) -> None:
        # A Spark job's error can carry long Java traces: over the protocol's header limit
        # Stream.send refuses the marker, and the feed failed naming its size, not its cause.
        if isinstance(self.reason, str) and len(self.reason) > MAX_ERROR:
            object.__setattr__(self, "reason", self.reason[:MAX_ERROR] + " ...[cut]")


@dataclass(frozen=True)
class EndAll(Message):
    """Every feed has ended."""

    TYPE: ClassVar[str] = "end_all"


@dataclass(frozen=True)
class WithdrawEpoch(Message):
    """Epoch *epoch* of *feed* was fed ahead (batches of feeding job *job*) and its call
    stopped before the driver heard that this node's reader asked for it: unless the reader
    has begun it, the node drops its batches, those held and any that still come, and the
    epoch's number is the next call's. Answered by :class:`Withdrawn`."""

    TYPE: ClassVar[str] = "withdraw_epoch"
    feed: str
    epoch: int
    job: int


@dataclass(frozen=True)
class Withdrawn(Message):
    """The answer to :class:`WithdrawEpoch` (*feed*, *epoch* and *job* as it named them):
    *withdrawn* True if the node dropped the epoch's batches (its reader had not begun it);
    False if its reader had begun it (the driver then ends the epoch, short, with
    ``end_epoch``)."""

    TYPE: ClassVar[str] = "withdrawn"
    feed: str
    epoch: int
    job: int
    withdrawn: bool


@dataclass(frozen=True)
class Demand(Message):
    """The node's reader started epoch *epoch* of *feed*."""

    TYPE: ClassVar[str] = "demand"
    feed: str
    epoch: int


@dataclass(frozen=True)
class ReaderLeft(Message):
    """The node's reader is done with *feed*."""

    TYPE: ClassVar[str] = "reader_left"
    feed: str


@dataclass(frozen=True)
class Closing(Message):
    """``main_fun`` ended on the node: *status* ``"finished"`` or ``"failed"``."""

    TYPE: ClassVar[str] = "closing"
    status: str


# -- the feed: a feeding task's connection -----------------------------------------------------


@dataclass(frozen=True)
class FeederHello(Message):
    """A feeding task opens a connection for epoch *epoch* of *feed* of attempt *attempt*."""

    TYPE: ClassVar[str] = "feeder"
    feed: str
    epoch: int
    attempt: int


@dataclass(frozen=True)
class Ready(Message):
    """Send batches."""

    TYPE: ClassVar[str] = "ready"


@dataclass(frozen=True)
class Stopped(Message):
    """The feed is stopped: send nothing more."""

    TYPE: ClassVar[str] = "stopped"


@dataclass(frozen=True)
class Batch(Message):
    """One batch (the payload): its identity, for dropping a retried task's duplicates."""

    TYPE: ClassVar[str] = "batch"
    PAYLOAD: ClassVar[bool] = True
    job: int
    partition: int
    seq: int
    records: int


@dataclass(frozen=True)
class End(Message):
    """Every batch of the connection was sent."""

    TYPE: ClassVar[str] = "end"


@dataclass(frozen=True)
class Ack(Message):
    """Every batch of the connection is buffered (*stopped*: or the feed was stopped)."""

    TYPE: ClassVar[str] = "ack"
    stopped: bool


#: What a control server accepts as a first message.
CONTROL_HELLOS: tuple[type[Message], ...] = (Hello,)
#: What the driver receives from a node's task after the hello.
FROM_NODE_TASK: tuple[type[Message], ...] = (Started, Heartbeat, Log, TensorBoard, Report, Done)
#: What a node's task receives from the driver.
FROM_DRIVER: tuple[type[Message], ...] = (Stop, Grow)
#: What a feed server accepts as a first message.
FEED_HELLOS: tuple[type[Message], ...] = (DriverHello, FeederHello)
#: What a feed server receives on the driver's link.
FROM_DRIVER_LINK: tuple[type[Message], ...] = (EndEpoch, FailEpoch, EndAll, WithdrawEpoch)
#: What the driver's link receives from a feed server.
FROM_FEED_SERVER: tuple[type[Message], ...] = (Demand, ReaderLeft, Closing, Withdrawn)
#: What a feed server receives from a feeding task after the hello.
FROM_FEEDER: tuple[type[Message], ...] = (Batch, End)
#: What a feeding task receives (the jar's ``FeedSender`` reads these).
TO_FEEDER: tuple[type[Message], ...] = (Ready, Stopped, Ack)
#: Every message type, as ``docs/protocol.md`` lists them.
ALL: tuple[type[Message], ...] = (
    CONTROL_HELLOS + FROM_NODE_TASK + FROM_DRIVER + FEED_HELLOS + FROM_DRIVER_LINK
    + FROM_FEED_SERVER + FROM_FEEDER + TO_FEEDER
)


def _fields(cls: type[Message]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


_FIELDS = {cls: _fields(cls) for cls in ALL}


def encode(message: Message) -> dict[str, Any]:
    """The JSON header of *message*: ``"type"`` and its fields (optional fields left out
    while None, enums as their values)."""
    header: dict[str, Any] = {"type": message.TYPE}
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        if value is None and f.default is None:
            continue
        header[f.name] = value.value if isinstance(value, enum.Enum) else value
    return header


def _check(value: Any, hint: Any, where: str) -> Any:
    """*value* as of type *hint*, or raise ValueError naming *where*."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check(value, inner[0], where)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            pass
    elif origin is list:
        if isinstance(value, list):
            return [_check(v, args[0], f"{where}[]") for v in value]
    elif origin is dict:
        if isinstance(value, dict):
            return {_check(k, args[0], f"{where} key"): _check(v, args[1], f"{where}[{k!r}]")
                    for k, v in value.items()}
    name = getattr(hint, "__name__", str(hint))
    raise ValueError(f"{where} is {type(value).__name__} {value!r:.40}, not {name}")


def parse(header: dict[str, Any], expected: tuple[type[Message], ...]) -> Message:
    """The message of *header*, one of the *expected* types.

    Raises:
        ChannelError: a type not expected here, a missing or unknown field, a field of the
            wrong type.
    """
    kind = header.get("type")
    cls = next((c for c in expected if c.TYPE == kind), None)
    if cls is None:
        allowed = ", ".join(repr(c.TYPE) for c in expected)
        raise ChannelError(f"a {kind!r} message where only {allowed} may come")
    fields = _FIELDS[cls]
    unknown = sorted(set(header) - set(fields) - {"type"})
    if unknown:
        raise ChannelError(f"a {kind!r} message with unknown fields {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in header:
            if f.default is dataclasses.MISSING:
                raise ChannelError(f"a {kind!r} message without its {f.name!r}")
            continue
        try:
            values[f.name] = _check(header[f.name], fields[f.name], f"{kind}.{f.name}")
        except ValueError as e:
            raise ChannelError(f"a malformed {kind!r} message: {e}") from None
    return cls(**values)
