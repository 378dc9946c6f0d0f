"""Node programs (``main_fun``) of the feeding tests. Pickled by value (see conftest.py).

Records fed by the tests are either raw ``bytes`` ``b"r<N>"`` (RDDs) or Examples with an int64
feature ``id`` (DataFrames); the programs write what each node read, per epoch, as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import time

#: How many records the ``fed_records`` fixture (tests/cluster/conftest.py) holds.
FED_RECORDS = 4000


def _ids(batch, features):
    """The ids in a batch of records: Examples' ``id`` feature, or ``b"r<N>"`` bytes."""
    import tensorflow as tf

    if features == "example":
        parsed = tf.io.parse_example(batch, {"id": tf.io.FixedLenFeature([], tf.int64)})
        return [int(i) for i in parsed["id"].numpy()]
    return [int(r[1:]) for r in batch.numpy().tolist()]


def _write(args, ctx, name, info):
    path = os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}-{name}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(path + ".tmp", path)


def read_epochs(args, ctx):
    """Read args["epochs"] epochs of each feed in args["feeds"] (in turn: epoch 1 of every
    feed, then epoch 2...); with args["fit"], then model.fit two epochs of feed "fit" (parsed
    features id, x); then one more iteration of each feed (after c.wait() ends the feeds, it
    must be empty). Writes the ids read per feed and epoch, and the fit's steps per epoch."""
    _write(args, ctx, "started", {"pid": os.getpid(), "ppid": os.getppid()})
    feeds = args.get("feeds", ["train"])
    kinds = args.get("features", {})
    seen = {name: [] for name in feeds}
    datasets = {name: ctx.feed(name).batch(args.get("batch", 100)) for name in feeds}
    for _ in range(args.get("epochs", 1)):
        for name in feeds:
            ids = []
            for batch in datasets[name]:
                ids.extend(_ids(batch, kinds.get(name, "bytes")))
            seen[name].append(ids)
    info = {"epochs": seen, "pid": os.getpid(), "ppid": os.getppid()}
    if args.get("fit"):
        info["fit"] = _fit(ctx)
        feeds = [*feeds, "fit"]
    info["after_end"] = {name: sum(1 for _ in ctx.feed(name)) for name in feeds}
    _write(args, ctx, "read", info)


def _fit(ctx):
    """model.fit(epochs=2) on feed "fit" parsed to features; the batches of each epoch."""
    import keras
    import tensorflow as tf

    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([4], tf.float32)}
    data = ctx.feed("fit", features=spec, batch_size=8).map(
        lambda d: (d["x"], tf.cast(d["id"] % 2, tf.float32)))
    steps = []

    class Count(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            steps.append(0)

        def on_train_batch_end(self, batch, logs=None):
            steps[-1] += 1

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(data, epochs=2, verbose=0, callbacks=[Count()])
    return {"steps": steps, "losses": len(history.history["loss"])}


def read_then_stop(args, ctx):
    """Read args["take"] records of the first epoch of "train", then stop reading: by
    ctx.stop_feed("train") (args["how"] == "stop_feed": then iterate once more, which must be
    empty, and wait for the file args["flag"] before returning) or by returning."""
    count = 0
    for batch in ctx.feed("train").batch(10):
        count += int(batch.shape[0])
        if count >= args["take"]:
            break
    info = {"read": count}
    if args["how"] == "stop_feed":
        ctx.stop_feed("train")
        info["after_stop"] = sum(1 for _ in ctx.feed("train"))
        _write(args, ctx, "stop", info)
        deadline = time.monotonic() + 120
        while not os.path.exists(args["flag"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        info["flag_seen"] = os.path.exists(args["flag"])
    _write(args, ctx, "stop", info)


def fail_while_fed(args, ctx):
    """Read "train"; the node args["node"] fails after args["after"] records (writing the
    time to OUT/failed-at.json first): raises, or SIGKILLs itself with args["how"] == "kill";
    the others keep reading."""
    me = f"{ctx.job_name}:{ctx.task_index}"
    count = 0
    for _ in range(args.get("epochs", 1)):
        for batch in ctx.feed("train").batch(10):
            count += int(batch.shape[0])
            if me == args["node"] and count >= args["after"]:
                with open(os.path.join(args["out"], "failed-at.json"), "w") as f:
                    json.dump({"time": time.time()}, f)
                if args.get("how") == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError(f"planned failure on {me} after {count} fed records")


def read_stream(args, ctx):
    """Read args["epochs"] epochs of feed "stream" (a stream: one epoch, open until its query
    stops); write the ids (Examples' id feature) of each epoch."""
    epochs = []
    for _ in range(args["epochs"]):
        ids = []
        for batch in ctx.feed("stream").batch(50):
            ids.extend(_ids(batch, "example"))
        epochs.append(ids)
    _write(args, ctx, "stream", {"epochs": epochs})


def read_with_pause(args, ctx):
    """Read epoch 1 of feed "train", pause args["pause"] seconds, then read epoch 2; writes the
    ids of each epoch and when (time.time()) the reader asked for epoch 2."""
    dataset = ctx.feed("train").batch(100)
    first = [i for batch in dataset for i in _ids(batch, "bytes")]
    time.sleep(args["pause"])
    asked = time.time()
    second = [i for batch in dataset for i in _ids(batch, "bytes")]
    _write(args, ctx, "read", {"epochs": [first, second], "asked": asked})


def read_late(args, ctx):
    """Sleep args["pause"] seconds before reading one epoch of feed "train"; writes its ids."""
    time.sleep(args["pause"])
    ids = [i for batch in ctx.feed("train").batch(100) for i in _ids(batch, "bytes")]
    _write(args, ctx, "read", {"ids": ids})


def fail_once_while_fed(args, ctx):
    """Attempt 0: every node reads args["epochs"] epochs of "train"; the node args["node"]
    raises after args["after"] records (or, with args["after"] None, once it has read them
    all). Later attempts: read args["epochs"] epochs and write the ids of each (as
    ``read-<attempt>``); returns how many epochs were read."""
    me = f"{ctx.job_name}:{ctx.task_index}"
    epochs, count = [], 0
    data = ctx.feed("train").batch(100)
    for _ in range(args["epochs"]):
        ids = []
        for batch in data:
            ids.extend(_ids(batch, "bytes"))
            count += int(batch.shape[0])
            if ctx.attempt == 0 and me == args["node"] and args["after"] is not None \
                    and count >= args["after"]:
                raise RuntimeError(f"planned failure on {me} after {count} fed records")
        epochs.append(ids)
    if ctx.attempt == 0 and me == args["node"]:
        raise RuntimeError(f"planned failure on {me} after every epoch")
    _write(args, ctx, f"read-{ctx.attempt}", {"epochs": epochs})
    return len(epochs)


def read_one_epoch_then_wait(args, ctx):
    """Read epoch 1 of feed "train", say so (``<node>-epoch1.json``), then wait to be stopped
    (by the driver going away)."""
    ids = [i for batch in ctx.feed("train").batch(100) for i in _ids(batch, "example")]
    _write(args, ctx, "epoch1", {"ids": len(ids)})
    time.sleep(args.get("wait", 600))


def read_slowly_with_boundaries(args, ctx):
    """Read args["epochs"] epochs of "train" in batches of 100, slowly (0.2 s a batch), saying
    after the first batch of an attempt that it reads (``reading-<attempt>``), with a
    ctx.resize_point() after each epoch; an attempt of fewer than args["grow_to"] workers
    first waits there (up to 120 s) for ctx.resize_pending. Writes the ids of each epoch
    (``read-<attempt>``); returns [attempt, num_workers]."""
    epochs = []
    data = ctx.feed("train").batch(100)
    for _ in range(args["epochs"]):
        ids = []
        for batch in data:
            ids.extend(_ids(batch, "bytes"))
            _write(args, ctx, f"reading-{ctx.attempt}", {"records": len(ids)})
            time.sleep(0.2)
        epochs.append(ids)
        deadline = time.monotonic() + 120
        while ctx.num_workers < args["grow_to"] and not ctx.resize_pending \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        ctx.resize_point()
    _write(args, ctx, f"read-{ctx.attempt}", {"epochs": epochs})
    return [ctx.attempt, ctx.num_workers]


def read_two_then_wait_for_go(args, ctx):
    """Read epochs 1 and 2 of feed "train" (saying so: ``<node>-two.json``), wait (up to
    120 s) for the file ``go`` in args["out"], then read one more epoch; writes the ids of
    each epoch."""
    data = ctx.feed("train").batch(100)
    epochs = [[i for batch in data for i in _ids(batch, "bytes")] for _ in range(2)]
    _write(args, ctx, "two", {"records": [len(e) for e in epochs]})
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(args["out"], "go")) and time.monotonic() < deadline:
        time.sleep(0.1)
    epochs.append([i for batch in data for i in _ids(batch, "bytes")])
    _write(args, ctx, "read", {"epochs": epochs})
