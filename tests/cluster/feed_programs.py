"""Node programs (``main_fun``) of the feeding tests. Pickled by value (see conftest.py).

Records fed by the tests are either raw ``bytes`` ``b"r<N>"`` (RDDs) or Examples with an int64
feature ``id`` (DataFrames); the programs write what each node read, per epoch, as JSON.
"""

from __future__ import annotations

import json
import os
import time


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
    feed, then epoch 2...), then one more iteration of each (after c.wait() ends the feeds, it
    must be empty); write the ids read per feed and epoch."""
    feeds = args.get("feeds", ["train"])
    seen = {name: [] for name in feeds}
    datasets = {name: ctx.feed(name).batch(args.get("batch", 100)) for name in feeds}
    for _ in range(args.get("epochs", 1)):
        for name in feeds:
            ids = []
            for batch in datasets[name]:
                ids.extend(_ids(batch, args.get("features", "bytes")))
            seen[name].append(ids)
    after = {name: sum(1 for _ in datasets[name]) for name in feeds}
    info = {"epochs": seen, "after_end": after, "pid": os.getpid(), "ppid": os.getppid()}
    _write(args, ctx, "read", info)


def parsed_fit(args, ctx):
    """A few Keras steps on parsed features of feed "train" (``ctx.feed(features=...)``):
    each epoch is one fed epoch; write the steps and the ids seen."""
    import tensorflow as tf

    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([4], tf.float32)}
    ds = ctx.feed("train", features=spec, batch_size=8)
    ids = []

    def split(d):
        return d["x"], tf.cast(d["id"] % 2, tf.float32)

    counter = ds.map(lambda d: d["id"])
    for epoch in range(args["epochs"]):
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        if epoch == 0:
            history = model.fit(ds.map(split), epochs=1, verbose=0)
            ids.append(None)
            steps = len(history.history["loss"])
        else:
            ids.append([int(i) for b in counter for i in b.numpy()])
    _write(args, ctx, "fit", {"epochs_fit": steps, "ids": ids})


def read_then_stop(args, ctx):
    """Read args["take"] batches of the first epoch of "train", then stop reading (by
    ctx.stop_feed() if args["how"] == "stop_feed", else by returning); write how many."""
    count = 0
    for batch in ctx.feed("train").batch(10):
        count += int(batch.shape[0])
        if count >= args["take"]:
            break
    if args["how"] == "stop_feed":
        ctx.stop_feed("train")
        after = sum(1 for _ in ctx.feed("train"))
        _write(args, ctx, "stop", {"read": count, "after_stop": after})
        time.sleep(args.get("linger", 0))
    else:
        _write(args, ctx, "stop", {"read": count})


def fail_while_fed(args, ctx):
    """Read from "train"; the node args["node"] raises after args["after"] records, the
    others keep reading."""
    me = f"{ctx.job_name}:{ctx.task_index}"
    with open(os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.pid"), "w") as f:
        f.write(str(os.getpid()))
    count = 0
    for _ in range(args.get("epochs", 1)):
        for batch in ctx.feed("train").batch(10):
            count += int(batch.shape[0])
            if me == args["node"] and count >= args["after"]:
                raise RuntimeError(f"planned failure on {me} after {count} fed records")
            time.sleep(args.get("pause", 0.0))


def read_stream(args, ctx):
    """Read one epoch of the stream feed "stream" (open until the query stops); write ids."""
    ids = []
    for batch in ctx.feed("stream").batch(50):
        ids.extend(_ids(batch, "example"))
    _write(args, ctx, "stream", {"ids": ids})
