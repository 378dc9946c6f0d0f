"""What ``main_fun(args, ctx)`` learns about its node: :class:`NodeContext`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tfrecord_io.cluster.description import NodeDescription
from tfrecord_io.cluster.growth import Boundary
from tfrecord_io.cluster.reporter import Reporter, keras_callback

__all__ = [
    "NodeContext",
    "NODE_ENV",
    "NODE_FILE",
    "per_worker_dataset_fn",
]

#: Environment variable holding the node's name (``worker:1``) in every node process.
NODE_ENV = "TFRECORD_IO_NODE"
#: The file in a node's working directory holding the node's name (``worker:1``). The ps-mode
#: dataset function reads it, from inside the TensorFlow graph, on the remote worker: a forked
#: node's ``/proc/self/environ`` is its parent's, its working directory its own.
NODE_FILE = "node-name"

# RE2 pattern over the node file: the index of a ps-mode worker.
_WORKER_INDEX = r"^worker:([0-9]+)$"


class NodeContext:
    """The node's place in the cluster, handed to ``main_fun(args, ctx)``.

    Attributes:
        job_name: ``"chief"``, ``"worker"``, ``"ps"`` or ``"evaluator"``.
        task_index: the index within the job.
        num_workers: how many workers this attempt has (``num_workers`` of
            :func:`~tfrecord_io.cluster.run`, or fewer with ``min_workers``).
        is_chief: whether this node is the chief (``worker:0`` in sync mode, ``chief:0`` in
            ps mode): the one that should write checkpoints, summaries and the final model.
        cluster_spec: the training cluster, ``{"worker": ["host:port", ...], ...}``.
        tf_config: this node's ``TF_CONFIG`` (also ``os.environ["TF_CONFIG"]``).
        log_dir: the cluster's log directory (local or ``hdfs://``), or None.
        checkpoint_dir: where to save and find checkpoints: ``LOG_DIR/checkpoints``, or a
            directory of the driver's temporary space when ``log_dir`` is None (valid on a
            single host only). The same for every attempt.
        attempt: 0 on the first try; after a failure with ``max_attempts > 1``, or a resize
            with ``min_workers``, 1, 2, ...
        mode: ``"sync"`` or ``"ps"``.
        resize_pending: with ``min_workers``, whether the driver said the gang can grow (the
            application can place more workers than this attempt has): ``main_fun`` should
            reach its next boundary (:meth:`resize_point`, or an epoch's start with
            :meth:`keras_callback`) soon.
    """

    def __init__(
        self,
        node: NodeDescription,
        *,
        feed_server: Any = None,
        reporter: Reporter | None = None,
        workdir: str | None = None,
    ) -> None:
        self._node = node
        options, role = node.attempt.options, node.role
        self._boundary = Boundary(
            workdir,
            can_grow=options.min_workers is not None
            and node.attempt.num_workers < options.num_workers
            and role.job_name in ("chief", "worker"),
            agree=options.mode == "sync" and node.attempt.num_workers > 1,
        )
        self._strategy: Any = None
        self._lock = threading.Lock()
        self._feed_server = feed_server
        self._reporter = reporter or Reporter(None, node.role.name, node.attempt.number)

    # The node's description, read through (the attributes of the class docstring).

    @property
    def job_name(self) -> str:
        return self._node.role.job_name

    @property
    def task_index(self) -> int:
        return self._node.role.task_index

    @property
    def is_chief(self) -> bool:
        return self._node.role.is_chief

    @property
    def mode(self) -> str:
        return self._node.attempt.options.mode

    @property
    def num_workers(self) -> int:
        return self._node.attempt.num_workers

    @property
    def cluster_spec(self) -> dict[str, list[str]]:
        return self._node.cluster_spec

    @property
    def tf_config(self) -> dict[str, Any]:
        return self._node.tf_config

    @property
    def log_dir(self) -> str | None:
        return self._node.attempt.options.log_dir

    @property
    def checkpoint_dir(self) -> str:
        return self._node.attempt.options.checkpoint_dir

    @property
    def attempt(self) -> int:
        return self._node.attempt.number

    @property
    def resize_pending(self) -> bool:
        return self._boundary.pending()

    @property
    def name(self) -> str:
        """``job:index``, e.g. ``worker:1``."""
        return f"{self.job_name}:{self.task_index}"

    def strategy(self) -> Any:
        """The ``tf.distribute`` strategy of this cluster, built on first call, then the same.

        ``MultiWorkerMirroredStrategy`` in sync mode, ``ParameterServerStrategy`` in ps mode
        (on the chief), the default strategy on the evaluator.
        """
        with self._lock:
            if self._strategy is None:
                from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - the tf layer, in the node process only

                tf = import_tensorflow()  # after TF_CONFIG is set

                if self.job_name == "evaluator":
                    self._strategy = tf.distribute.get_strategy()
                elif self.mode == "sync":
                    self._strategy = tf.distribute.MultiWorkerMirroredStrategy()
                else:
                    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
                    self._strategy = tf.distribute.ParameterServerStrategy(resolver)
            return self._strategy

    def dataset(self, paths: Any, **kwargs: Any) -> Any:
        """This node's exactly-once share of the TFRecord files *paths*.

        Sync mode: ``tfrecord_io.tf.dataset(paths, num_shards=num_workers,
        shard_index=task_index, **kwargs)``, a ``tf.data.Dataset`` of serialized records (the
        evaluator gets everything).

        Ps mode: a dataset *function* for ``ClusterCoordinator.create_per_worker_dataset``
        (call it with or without an ``InputContext``). The files are dealt to the workers on
        the coordinator, whole, with :func:`tfrecord_io.tf.shard_plan`; inside the dataset
        graph, which runs on each remote worker, TensorFlow ops read the worker's own index
        from its process environment and pick its files, so every record is read by exactly
        one worker (TensorFlow itself passes no worker index: tensorflow issue 53080). Accepted
        *kwargs*: ``compression`` and ``buffer_size`` (TensorFlow's reader reads whole files).
        """
        from tfrecord_io import tf as tfr  # noqa: PLC0415 - the tf layer, in the node process only

        if self.mode == "sync" or self.job_name == "evaluator":
            if self.job_name == "evaluator":
                return tfr.dataset(paths, **kwargs)
            return tfr.dataset(
                paths, num_shards=self.num_workers, shard_index=self.task_index, **kwargs
            )
        return per_worker_dataset_fn(paths, self.num_workers, **kwargs)


    def feed(self, name: str = "train", features: Any = None, **parse: Any) -> Any:
        """This node's share of the feed *name* (``cluster.run(..., input_mode="spark")`` and
        ``Cluster.train(data, feed=name)``), as a ``tf.data.Dataset``.

        Each iteration over the dataset is the next fed epoch and ends with it; once the feed
        has ended (``Cluster.wait``/``shutdown``) or was stopped (:meth:`stop_feed`), an
        iteration is empty. Iterate one epoch at a time. See :mod:`tfrecord_io.cluster.feed`
        for the sharing rule (exactly once; equal counts per worker in sync mode).

        Args:
            name: the feed's name.
            features: None: scalar ``tf.string`` serialized records. A ``tf.io`` feature spec:
                parsed with :func:`tfrecord_io.tf.parse_examples` (``batch_size=...``,
                ``drop_remainder``, ``num_parallel_calls`` pass through *parse*).

        Raises:
            RuntimeError: the cluster was not started with ``input_mode="spark"``, or this node
                is not fed (the evaluator; ps-mode servers run no ``main_fun``).
        """
        if self._feed_server is None:
            raise RuntimeError(
                f"{self.name} is not fed: feeds need cluster.run(..., input_mode='spark'), and "
                "reach the nodes of the training cluster that run main_fun (not the evaluator)"
            )
        from tfrecord_io.cluster.feed.dataset import feed_dataset  # noqa: PLC0415 - only a fed node needs it

        dataset = feed_dataset(self._feed_server.buffer(name))
        if features is None:
            if parse:
                raise ValueError(f"parse options {sorted(parse)} need features=")
            return dataset
        from tfrecord_io import tf as tfr  # noqa: PLC0415 - the tf layer, in the node process only

        return tfr.parse_examples(dataset, features, **parse)

    def stop_feed(self, name: str | None = None) -> None:
        """Stop reading feed *name* (None: every feed): what is still fed to this node is
        dropped, and ``Cluster.train`` returns once its feeding tasks have noticed (at once
        for data not yet sent). ``main_fun`` returning does the same for every feed."""
        if self._feed_server is not None:
            self._feed_server.stop(name)

    def report(self, step: int | None = None, **metrics: Any) -> None:
        """Send *metrics* (numbers: Python, numpy or TensorFlow scalars; NaN and the
        infinities too) to the driver, where they are kept in order (``Cluster.metrics``,
        ``Result.metrics``), shown on the progress line and passed to
        ``cluster.run(..., on_report=...)``. Returns at once: when the driver does not keep up,
        reports are dropped rather than slowing training down; the node logs a warning at the
        first, and when ``main_fun`` ends how many were dropped (lines of its output, in the
        driver's log).

        Args:
            step: the step or epoch they belong to (any int: Python, numpy or TensorFlow;
                a float with no fractional part, ``3.0``, is taken as that int), or None.

        Raises:
            TypeError: a value or *step* that is not one number.
            ValueError: a *step* with a fractional part (``1.7``: never rounded to another
                step), a value beyond a float's range (``10**400``), or more than
                ``reporter.MAX_REPORT_BYTES`` (64 KiB) of metrics at once.
        """
        self._reporter.report(step, metrics)

    def keras_callback(self, every_n_batches: int | None = None) -> Any:
        """A Keras callback (for ``model.fit(..., callbacks=[...])``, tf-keras or Keras 3,
        whichever the node uses) that reports the logs of every epoch, and of every
        *every_n_batches*-th batch when given, like :meth:`report`.

        With ``min_workers``, the start of each epoch (after the first of the ``fit``) is also a
        boundary (:meth:`resize_point`): give ``fit`` a
        ``tf.keras.callbacks.BackupAndRestore(ctx.checkpoint_dir)`` too, which saves at each
        epoch's end and resumes the next attempt at the epoch that follows.

        Raises:
            TypeError: *every_n_batches* is not an int (``2.5``) nor None.
            ValueError: *every_n_batches* is under 1.
        """

        def boundary(model: Any) -> None:
            self._boundary.reach(lambda: _model_strategy(model, self.strategy))

        return keras_callback(self._reporter, every_n_batches, boundary=boundary)

    def resize_point(self, save: Callable[[], Any] | None = None) -> None:
        """A boundary of ``main_fun`` in a custom training loop (``cluster.run(min_workers=...)``):
        where it may leave for the gang to restart with more workers.

        Call it at the same points on every worker (after an epoch, or every *k* steps). It
        returns at once unless the attempt can grow and the driver said it may (then every
        worker agrees, through one all-reduce of the strategy of :meth:`strategy`, so that all
        leave at the same boundary): it then calls *save* (e.g. a
        ``tf.train.CheckpointManager``'s ``save``; None when the checkpoint of this point is
        written already) and raises :class:`~tfrecord_io.errors.ResizeInterrupt`, which ends
        ``main_fun``. The gang restarts with more workers; ``main_fun`` resumes from the
        checkpoint. Without ``min_workers``, or with every worker running, it costs nothing.
        """
        self._boundary.reach(self.strategy, save)


def _model_strategy(model: Any, fallback: Callable[[], Any]) -> Any:
    """The strategy a Keras *model* was built under, or *fallback*'s."""
    strategy = getattr(model, "distribute_strategy", None)
    return strategy if strategy is not None else fallback()


def per_worker_dataset_fn(
    paths: Any, num_workers: int, compression: str | None = None, buffer_size: int | None = None
) -> Callable[..., Any]:
    """A dataset function giving each ps-mode worker its own whole files (see
    :meth:`NodeContext.dataset`). Plans on the caller's side; the returned function builds
    native TensorFlow ops only.

    Raises:
        ValueError: the plan would cut a file into byte ranges (fewer files than workers and a
            split index): TensorFlow's reader, the only one a remote worker can run, reads
            whole files; give at least *num_workers* files.
    """
    from tfrecord_io import tf as tfr  # noqa: PLC0415 - the tf layer, in the node process only

    plan = tfr.shard_plan(paths, compression, num_workers)
    files: dict[str, tuple[list[str], list[int]]] = {}  # compression -> (paths, owners)
    for owner, pieces in enumerate(plan):
        for piece in pieces:
            if not piece.whole:
                raise ValueError(
                    f"mode='ps' reads whole files, but {piece.path} would be cut into byte "
                    f"ranges to feed {num_workers} workers: give at least {num_workers} files"
                )
            kind = files.setdefault(piece.compression, ([], []))
            kind[0].append(piece.path)
            kind[1].append(owner)

    def dataset_fn(input_context: Any = None) -> Any:
        from tfrecord_io.tf.runtime import import_tensorflow  # noqa: PLC0415 - the tf layer, in the node process only

        tf = import_tensorflow()

        # Empty outside a node: the assertion then says where this dataset runs.
        found = tf.io.matching_files(f"/proc/self/cwd/{NODE_FILE}")
        name = tf.strings.reduce_join(
            tf.map_fn(tf.io.read_file, found, fn_output_signature=tf.string))
        matched = tf.strings.regex_full_match(name, _WORKER_INDEX)
        check = tf.debugging.Assert(
            matched, [f"this dataset runs on ps-mode workers only (no {NODE_FILE} worker:N)"]
        )
        with tf.control_dependencies([check]):
            index = tf.strings.to_number(
                tf.strings.regex_replace(name, _WORKER_INDEX, r"\1"), tf.int32
            )
        result = None
        for compression_kind, (names, owners) in sorted(files.items()):
            mine = tf.boolean_mask(tf.constant(names), tf.equal(tf.constant(owners), index))
            ds = tf.data.TFRecordDataset(
                mine,
                compression_type="" if compression_kind == "none" else compression_kind.upper(),
                buffer_size=buffer_size,
            )
            result = ds if result is None else result.concatenate(ds)
        if result is None:
            result = tf.data.Dataset.from_tensor_slices(tf.constant([], tf.string))
        return result

    return dataset_fn
