"""Node programs (``main_fun``) of the cluster tests. Pickled by value (see conftest.py), so the
executors and node processes need not import this module."""

from __future__ import annotations

import json
import os
import signal
import time


def _command_line():
    with open("/proc/self/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


def record(args, ctx):
    """Write what the node sees to OUT/job-index.json, print a greeting, run one all-reduce."""
    info = {
        "job_name": ctx.job_name,
        "task_index": ctx.task_index,
        "num_workers": ctx.num_workers,
        "is_chief": ctx.is_chief,
        "cluster_spec": ctx.cluster_spec,
        "tf_config": ctx.tf_config,
        "env_tf_config": json.loads(os.environ["TF_CONFIG"]),
        "attempt": ctx.attempt,
        "checkpoint_dir": ctx.checkpoint_dir,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "legacy_keras": os.environ.get("TF_USE_LEGACY_KERAS"),
        "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "user_env": os.environ.get("CLUSTER_TEST_VAR"),
        "command_line": _command_line(),
    }
    if args.get("allreduce"):
        import tensorflow as tf

        strategy = ctx.strategy()
        assert strategy is ctx.strategy()
        value = strategy.reduce(
            tf.distribute.ReduceOp.SUM,
            strategy.run(lambda: tf.constant(float(ctx.task_index + 1))),
            axis=None,
        )
        info["allreduce"] = float(value)
        info["keras_package"] = tf.keras.Sequential.__module__.split(".")[0]
        from tensorflow.keras import layers  # resolved through tensorflow's own __path__

        info["layers_package"] = layers.Dense.__module__.split(".")[0]
    print(f"hello from {ctx.job_name}:{ctx.task_index}", flush=True)
    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.json"), "w") as f:
        json.dump(info, f)


def _started(args, ctx):
    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.pid"), "w") as f:
        f.write(str(os.getpid()))


def _idle(seconds=300.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.2)


def raise_on(args, ctx):
    """The node named args["node"] raises after args["delay"] s; the others wait to be stopped."""
    _started(args, ctx)
    if f"{ctx.job_name}:{ctx.task_index}" == args["node"]:
        time.sleep(args.get("delay", 0.0))
        raise ValueError(f"planned failure on {ctx.job_name}:{ctx.task_index}")
    _idle()


def kill_self_on(args, ctx):
    """The node named args["node"] SIGKILLs its own process after args["delay"] s."""
    _started(args, ctx)
    if f"{ctx.job_name}:{ctx.task_index}" == args["node"]:
        time.sleep(args.get("delay", 0.0))
        os.kill(os.getpid(), signal.SIGKILL)
    _idle()


def idle_until_restarted(args, ctx):
    """On the first attempt every node writes its pid and waits (for its executor to be
    killed); a later attempt returns ``[ctx.attempt, ctx.num_workers]``."""
    if ctx.attempt == 0:
        _started(args, ctx)
        _idle(120)
    return [ctx.attempt, ctx.num_workers]


def wait_for_file(args, ctx):
    """Every node waits until args["flag"] exists (at most 120 s), then returns."""
    _started(args, ctx)
    deadline = time.monotonic() + 120
    while not os.path.exists(args["flag"]) and time.monotonic() < deadline:
        time.sleep(0.2)


def _sgd_step(strategy, model, optimizer):
    """One step of mean squared error under *strategy*, as a tf.function of (x, y) returning
    the mean loss over the replicas."""
    import tensorflow as tf

    @tf.function
    def step(x, y):
        def replica(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                          model.trainable_variables, strict=True))
            return loss
        losses = strategy.run(replica, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, None)

    return step


def train(args, ctx):
    """A few steps of a tiny linear model under the strategy (custom loop, Keras 3 layers);
    the node named args.get("fail_node") fails at step args["fail_step"], by args["how"]
    ("raise" or "kill")."""
    import keras
    import tensorflow as tf

    strategy = ctx.strategy()
    _started(args, ctx)
    with strategy.scope():
        model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(0.1)

    step = _sgd_step(strategy, model, optimizer)

    x = tf.ones((8, 4))
    y = tf.ones((8, 1))
    me = f"{ctx.job_name}:{ctx.task_index}"
    for i in range(args.get("steps", 1000)):
        if me == args.get("fail_node") and i == args["fail_step"]:
            if args["how"] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"planned failure at step {i} on {me}")
        step(x, y)
        if i == 0:
            print(f"{me}: first step done", flush=True)


def ps_read_all(args, ctx):
    """The ps-mode coordinator: every worker reads its share of args["paths"] through
    ctx.dataset in one batch; the records read are written to OUT/read.json."""
    import tensorflow as tf

    strategy = ctx.strategy()
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    records_fn = ctx.dataset(args["paths"])

    def dataset_fn(*context):
        return records_fn(*context).batch(100_000)  # a worker's whole share in one batch

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def take(iterator):
        optional = iterator.get_next_as_optional()
        return tf.cond(optional.has_value(), optional.get_value,
                       lambda: tf.constant([], tf.string))

    results = [coordinator.schedule(take, args=(iterator,)) for _ in range(args.get("calls", 30))]
    coordinator.join()
    read = [r.decode() for result in results for r in result.fetch().tolist()]
    with open(os.path.join(args["out"], "read.json"), "w") as f:
        json.dump({"read": read, "job_name": ctx.job_name, "cluster_spec": ctx.cluster_spec}, f)


def _tiny_fit(ctx):
    """A linear model compiled under ctx's strategy (tf-keras) and 64 rows of y = sum(x) in
    batches of 16."""
    import tensorflow as tf

    with ctx.strategy().scope():
        model = tf.keras.Sequential([tf.keras.layers.Input((4,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    x = tf.random.stateless_uniform((64, 4), seed=(1, 2))
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    return model, tf.data.Dataset.from_tensor_slices((x, y)).batch(16)


def keras_fit(args, ctx):
    """model.fit of a tiny model under the strategy (keras="legacy": tf-keras)."""

    model, dataset = _tiny_fit(ctx)
    history = model.fit(dataset, epochs=3, verbose=0)
    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.json"), "w") as f:
        json.dump({"model_module": type(model).__module__, "loss": history.history["loss"]}, f)


def resume(args, ctx):
    """Count steps to args["steps"], checkpointing every 5 under ctx.checkpoint_dir (the chief;
    the others in a scratch directory, as MultiWorkerMirroredStrategy wants); on attempt 0 the
    node args["fail_node"] is SIGKILLed at step args["fail_step"]. Writes where each attempt
    started to OUT/attempt-A-job-index.json."""
    import tempfile

    import tensorflow as tf

    strategy = ctx.strategy()
    with strategy.scope():
        step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(step=step)
    directory = ctx.checkpoint_dir if ctx.is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    latest = tf.train.latest_checkpoint(ctx.checkpoint_dir)
    if latest:
        checkpoint.restore(latest)
    name = f"{ctx.job_name}-{ctx.task_index}"
    with open(os.path.join(args["out"], f"attempt-{ctx.attempt}-{name}.json"), "w") as f:
        json.dump({"attempt": ctx.attempt, "start": int(step.numpy()),
                   "checkpoint_dir": ctx.checkpoint_dir}, f)
    me = f"{ctx.job_name}:{ctx.task_index}"
    while int(step.numpy()) < args["steps"]:
        # an all-reduce per step keeps the workers in lockstep, as training would
        strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), None)
        step.assign_add(1)
        if int(step.numpy()) % 5 == 0:
            manager.save()
        if ctx.attempt == 0 and me == args["fail_node"] and int(step.numpy()) == args["fail_step"]:
            os.kill(os.getpid(), signal.SIGKILL)
    with open(os.path.join(args["out"], f"final-{name}.json"), "w") as f:
        json.dump({"attempt": ctx.attempt, "step": int(step.numpy())}, f)


def report_and_return(args, ctx):
    """Report args["steps"] steps of metrics (loss = step / 10, plus the node's index), then
    return a value naming the node; on attempt 0, the node args.get("fail_on") raises after its
    reports. With args["big"], return that many bytes."""
    for step in range(1, args.get("steps", 3) + 1):
        ctx.report(step=step, loss=step / 10, index=ctx.task_index)
    if ctx.attempt == 0 and f"{ctx.job_name}:{ctx.task_index}" == args.get("fail_on"):
        time.sleep(0.5)  # its reports reach the driver before the failure
        raise RuntimeError("planned failure after reporting")
    if args.get("big"):
        return b"x" * args["big"]
    return {"node": f"{ctx.job_name}:{ctx.task_index}", "attempt": ctx.attempt}


def touch_memory(args, ctx):
    """Touch args["mib"] MiB (more than the node's memory limit: the OOM killer ends it)."""
    held = b"\x01" * (args["mib"] << 20)
    time.sleep(60)
    return len(held)


def sleep_then_write(args, ctx):
    """Sleep args["seconds"], then write OUT/job-index.done: a node still training when the
    driver's `with` block ends."""
    time.sleep(args["seconds"])
    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.done"), "w") as f:
        f.write("done")
    return ctx.task_index


def keras_report(args, ctx):
    """model.fit of a tiny model for 3 epochs of 4 batches with ctx.keras_callback(2)."""
    import numpy as np
    import tensorflow as tf

    x = np.arange(32, dtype="float32").reshape(16, 2)
    y = x.sum(axis=1)
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=4, epochs=3, verbose=0,
              callbacks=[ctx.keras_callback(every_n_batches=2)])


def object_store_run(args, ctx):
    """Sync mode on object-store URLs: each worker reads its ctx.dataset share of args["paths"]
    (to OUT/read-INDEX.json); five steps of a tiny Keras 3 model, checkpointed to
    ctx.checkpoint_dir by the chief (by the others to a scratch directory, as
    MultiWorkerMirroredStrategy wants) with the loss summarized under ctx.log_dir; the chief
    saves the model as a Keras file to args["model"] and its weights to OUT/weights.json."""
    import tempfile

    import keras
    import tensorflow as tf

    strategy = ctx.strategy()  # before any other TensorFlow op: collectives are set up first
    read = [r.decode() for r in ctx.dataset(args["paths"]).as_numpy_iterator()]
    with open(os.path.join(args["out"], f"read-{ctx.task_index}.json"), "w") as f:
        json.dump(read, f)
    with strategy.scope():
        model = keras.Sequential([keras.Input(shape=(4,), name="x"),
                                  keras.layers.Dense(1, name="y")])
        optimizer = keras.optimizers.SGD(0.1)
    checkpoint = tf.train.Checkpoint(model=model)
    directory = ctx.checkpoint_dir if ctx.is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    writer = (tf.summary.create_file_writer(f"{ctx.log_dir}/train") if ctx.is_chief
              else tf.summary.create_noop_writer())

    step = _sgd_step(strategy, model, optimizer)

    x = tf.ones((8, 4))
    y = tf.ones((8, 1))
    with writer.as_default():
        for i in range(5):
            tf.summary.scalar("loss", step(x, y), step=i)
    manager.save()
    writer.flush()
    if ctx.is_chief:
        plain = keras.models.clone_model(model)  # its variables outside the strategy
        plain.set_weights(model.get_weights())
        plain.save(args["model"])  # Keras writes a remote path through tf.io.gfile
        kernel, bias = (w.tolist() for w in plain.get_weights())
        with open(os.path.join(args["out"], "weights.json"), "w") as f:
            json.dump({"kernel": kernel, "bias": bias}, f)


def warm_before_and_after_tensorflow_runs(_):
    """In a fork of this Spark worker (the worker itself stays as it was): whether a node could
    be forked from it before and after TensorFlow ran an op."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports and exits
        from tfrecord_io.cluster import daemon
        from tfrecord_io.tf.runtime import import_tensorflow

        before = daemon.matches(os.environ)
        tf = import_tensorflow()
        tf.constant(1.0) + 1.0
        os.write(write, json.dumps([before, daemon.matches(os.environ)]).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        yield f.read()


def elastic_fit(args, ctx):
    """model.fit of a tiny model for args["epochs"] epochs under the strategy (tf-keras),
    resumable: BackupAndRestore in ctx.checkpoint_dir, ctx.keras_callback() for its
    boundaries; each epoch lasts at least args["epoch_seconds"], and an attempt of fewer than
    args["grow_to"] workers waits at each epoch's end (up to 120 s) for ctx.resize_pending. Each
    node writes OUT/attempt-A-worker-I.json: the attempt's number of workers and the epochs it
    began."""
    import tensorflow as tf

    model, dataset = _tiny_fit(ctx)
    path = os.path.join(args["out"], f"attempt-{ctx.attempt}-{ctx.job_name}-{ctx.task_index}.json")
    began = []

    class Mark(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            began.append(epoch)
            with open(path, "w") as f:
                json.dump({"workers": ctx.num_workers, "began": began}, f)

        def on_epoch_end(self, epoch, logs=None):
            time.sleep(args["epoch_seconds"])
            deadline = time.monotonic() + 120
            while ctx.num_workers < args["grow_to"] and not ctx.resize_pending \
                    and time.monotonic() < deadline:
                time.sleep(0.1)

    backup = tf.keras.callbacks.BackupAndRestore(os.path.join(ctx.checkpoint_dir, "backup"))
    history = model.fit(dataset, epochs=args["epochs"], verbose=0,
                        callbacks=[backup, ctx.keras_callback(), Mark()])
    return {"loss": history.history["loss"], "workers": ctx.num_workers}


class _TwoArgumentsError(Exception):
    """Pickles (as an exception's args) but cannot be unpickled: __init__ takes two."""

    def __init__(self, a, b):
        super().__init__(a)


def return_what_cannot_be_unpickled(args, ctx):
    return _TwoArgumentsError(1, 2)



def exit_with(args, ctx):
    """Ends main_fun with ``sys.exit(args["code"])``."""
    import sys

    sys.exit(args["code"])


def os_exit_zero(args, ctx):
    """Ends the node process with status 0 before main_fun returns."""
    os._exit(0)


class _UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("no str for this one")


def raise_what_cannot_be_printed(args, ctx):
    """Raises an exception whose ``__str__`` raises."""
    raise _UnprintableError()
