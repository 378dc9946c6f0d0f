"""Node programs (``main_fun``) of the tests on real cluster managers (tests/yarn,
tests/standalone). Pickled by value (see those conftest.py files), so the executors and node
processes need not import this module."""

from __future__ import annotations

import json
import os
import tempfile
import time


def read_train_save(args, ctx):
    """Reads this worker's share of the records at args["paths"] (``ctx.dataset``), trains a
    tiny model in sync, writes the records it read to OUT/worker-INDEX.json, and the chief saves
    the model to args["model"]. With args["slow"], waits that long per record."""
    import tensorflow as tf

    import tfrecord_io.tf as tfr

    tfr.register_filesystems()
    strategy = ctx.strategy()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Input((1,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    read = []
    for record in ctx.dataset(args["paths"]):
        read.append(record.numpy().decode())
        time.sleep(args.get("slow", 0.0))
    # The same steps on every worker (the strategy's collectives pair them up): a fixed set.
    x = tf.reshape(tf.range(32, dtype=tf.float32), (32, 1))
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    data = tf.data.Dataset.from_tensor_slices((x, 2 * x)).batch(8).with_options(options)
    model.fit(data, epochs=2, verbose=0)
    print(f"{ctx.job_name}:{ctx.task_index} read {len(read)} records", flush=True)
    with open(os.path.join(args["out"], f"worker-{ctx.task_index}.json"), "w") as f:
        json.dump({"read": read, "cluster_spec": ctx.cluster_spec, "pid": os.getpid(),
                   "container": os.environ.get("CONTAINER_ID")}, f)
    # Every worker saves, in the same format (MultiWorkerMirroredStrategy pairs up the
    # collectives of saving); the chief's goes to args["model"], the others' to a scratch dir.
    target = args["model"] if ctx.is_chief else os.path.join(tempfile.mkdtemp(), "model.keras")
    model.save(target)


def raise_on(args, ctx):
    """The node named args["node"] raises after args["delay"] s; the others wait (at most 300 s)
    to be stopped."""
    if f"{ctx.job_name}:{ctx.task_index}" == args["node"]:
        time.sleep(args.get("delay", 0.0))
        raise ValueError(f"planned failure on {ctx.job_name}:{ctx.task_index}")
    time.sleep(300)


def host_of(args, ctx):
    """Returns the node's host (``SPARK_LOCAL_IP``) at once."""
    return os.environ.get("SPARK_LOCAL_IP")


def train_until_stopped(args, ctx):
    """Sync training steps (one all-reduce each) for at most 600 s; OUT/worker-INDEX.started
    says that the first step is done, and holds the node's host (``SPARK_LOCAL_IP``)."""
    import tensorflow as tf

    strategy = ctx.strategy()
    deadline = time.monotonic() + 600
    step = 0
    while time.monotonic() < deadline:
        strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), None)
        step += 1
        if step == 1:
            with open(os.path.join(args["out"], f"worker-{ctx.task_index}.started"), "w") as f:
                f.write(os.environ.get("SPARK_LOCAL_IP", ""))
        time.sleep(0.05)


def hold_memory_on(args, ctx):
    """Every node writes its YARN container id, host (``SPARK_LOCAL_IP``) and pid to
    ``args["out"]/JOB-INDEX.json``; the node named args["node"] then fills args["mib"] MiB
    (every page written) and holds them; all wait (at most 300 s) to be stopped."""
    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.json"), "w") as f:
        json.dump({"container": os.environ.get("CONTAINER_ID"), "pid": os.getpid(),
                   "host": os.environ.get("SPARK_LOCAL_IP")}, f)
    held = b""
    if f"{ctx.job_name}:{ctx.task_index}" == args["node"]:
        held = b"\x01" * (int(args.get("mib", 0)) << 20)
    time.sleep(300)
    return len(held)


def sgd_resume(args, ctx):
    """Fits w in y = 3x by plain SGD (learning rate args["lr"]; step k's batch is the one point
    x = k % 7 + 1) for args["steps"] steps, checkpointing w and the step every 5 under
    ctx.checkpoint_dir (the chief; the others in a scratch directory, as
    MultiWorkerMirroredStrategy wants), each step lasting at least args.get("step_seconds", 0),
    with a ctx.resize_point after each (saving there when the gang is to grow). On attempt 0,
    the node args.get("kill_node") kills its executor's JVM at step args["kill_step"], and with
    it its YARN container. Writes the attempt's size, container, host (SPARK_LOCAL_IP) and first
    step to OUT/attempt-A-job-index.json, the step where it left main_fun to grow to
    OUT/left-A-job-index.json, and w to OUT/final-job-index.json."""
    import tensorflow as tf

    strategy = ctx.strategy()
    with strategy.scope():
        step = tf.Variable(0, dtype=tf.int64)
        w = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(step=step, w=w)
    directory = ctx.checkpoint_dir if ctx.is_chief else tempfile.mkdtemp()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    latest = tf.train.latest_checkpoint(ctx.checkpoint_dir)
    if latest:
        checkpoint.restore(latest)
    name = f"{ctx.job_name}-{ctx.task_index}"
    with open(os.path.join(args["out"], f"attempt-{ctx.attempt}-{name}.json"), "w") as f:
        json.dump({"attempt": ctx.attempt, "start": int(step.numpy()),
                   "workers": ctx.num_workers, "container": os.environ.get("CONTAINER_ID"),
                   "host": os.environ.get("SPARK_LOCAL_IP")}, f)
    me = f"{ctx.job_name}:{ctx.task_index}"
    while int(step.numpy()) < args["steps"]:
        x = float(int(step.numpy()) % 7 + 1)
        grad = strategy.reduce(tf.distribute.ReduceOp.MEAN, strategy.run(
            lambda: 2.0 * (w.read_value() * x - 3.0 * x) * x), None)  # noqa: B023 - strategy.run calls it now
        w.assign_sub(args["lr"] * grad)
        step.assign_add(1)
        if int(step.numpy()) % 5 == 0:
            manager.save()
        if ctx.attempt == 0 and me == args.get("kill_node") and int(step.numpy()) == args[
                "kill_step"]:
            kill_executor()
            time.sleep(60)  # ended with its container
        time.sleep(args.get("step_seconds", 0))
        try:
            ctx.resize_point(save=manager.save)
        except BaseException:  # ResizeInterrupt: say where, then leave
            with open(os.path.join(args["out"], f"left-{ctx.attempt}-{name}.json"), "w") as f:
                json.dump({"step": int(step.numpy())}, f)
            raise
    with open(os.path.join(args["out"], f"final-{name}.json"), "w") as f:
        json.dump({"attempt": ctx.attempt, "step": int(step.numpy()), "w": float(w.numpy())}, f)


def sgd_uninterrupted_w(steps: int, lr: float) -> float:
    """What sgd_resume's *steps* steps make of w without a failure (on the driver)."""
    w = 0.0
    for k in range(steps):
        x = float(k % 7 + 1)
        w -= lr * 2.0 * (w * x - 3.0 * x) * x
    return w


def kill_executor():
    """Kills the Spark executor JVM this process descends from (read from /proc: the shipped
    environment has no psutil)."""
    import signal

    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                os.kill(pid, signal.SIGKILL)
                return
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])


def report_environment(args, ctx):
    """Writes where this node process's Python, tfrecord_io and TensorFlow come from, its
    working directory, PYTHONPATH and YARN container to OUT/JOB-INDEX-environment.json."""
    import sys

    import tensorflow as tf

    import tfrecord_io

    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}-environment.json"),
              "w") as f:
        json.dump({"executable": sys.executable, "tfrecord_io": tfrecord_io.__file__,
                   "tensorflow": tf.__file__, "pythonpath": os.environ.get("PYTHONPATH", ""),
                   "container": os.environ.get("CONTAINER_ID")}, f)


def ps_train_read(args, ctx):
    """The ps-mode coordinator: the workers read their shares of args["paths"] (ctx.dataset,
    10 records a step) and train w in y = 3x, w on the parameter server, one SGD step per
    scheduled function (x = 2, learning rate 0.05); then waits (at most 120 s) for the file
    args["flag"] if given. Writes the records read, w, the node's job and the cluster spec to
    OUT/ps-train.json."""
    import tensorflow as tf

    strategy = ctx.strategy()
    with strategy.scope():
        w = tf.Variable(0.0)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    records_fn = ctx.dataset(args["paths"])

    def dataset_fn(*context):
        return records_fn(*context).batch(10)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    def train_step():
        with tf.GradientTape() as tape:
            loss = (w * 2.0 - 6.0) ** 2
        w.assign_sub(0.05 * tape.gradient(loss, w))

    @tf.function
    def step(iterator):
        optional = iterator.get_next_as_optional()
        strategy.run(train_step)
        return tf.cond(optional.has_value(), optional.get_value,
                       lambda: tf.constant([], tf.string))

    results = [coordinator.schedule(step, args=(iterator,)) for _ in range(args.get("calls", 40))]
    coordinator.join()
    deadline = time.monotonic() + 120
    while args.get("flag") and not os.path.exists(args["flag"]) and time.monotonic() < deadline:
        time.sleep(0.2)  # the test looks at the running cluster (TensorBoard) first
    read = [r.decode() for result in results for r in result.fetch().tolist()]
    with open(os.path.join(args["out"], "ps-train.json"), "w") as f:
        json.dump({"read": read, "w": float(w.numpy()), "job_name": ctx.job_name,
                   "cluster_spec": ctx.cluster_spec}, f)

