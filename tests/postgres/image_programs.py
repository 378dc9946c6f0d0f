"""Node programs (``main_fun``) of the database tests. Pickled by value (see conftest.py)."""

from __future__ import annotations

import json
import os


def train_on_images(args, ctx):
    """Train a softmax regression on fed rows (id, label, image: PNG bytes) for args["epochs"]
    epochs, decoding the PNGs with TensorFlow; write, per epoch, each row's id, label and pixel
    sum, and the epoch's mean loss, as JSON."""
    import tensorflow as tf

    spec = {
        "id": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image": tf.io.FixedLenFeature([], tf.string),
    }

    def decode(f):
        pixels = tf.map_fn(lambda png: tf.io.decode_png(png, channels=1), f["image"],
                           fn_output_signature=tf.TensorSpec([28, 28, 1], tf.uint8))
        return f["id"], f["label"], pixels

    data = ctx.feed("train", features=spec, batch_size=100).map(decode)
    weights = tf.Variable(tf.zeros([784, 10]))
    bias = tf.Variable(tf.zeros([10]))
    optimizer = tf.optimizers.SGD(0.5)

    @tf.function
    def step(pixels, labels):
        x = tf.reshape(tf.cast(pixels, tf.float32) / 255.0, [-1, 784])
        with tf.GradientTape() as tape:
            logits = x @ weights + bias
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, [weights, bias])
        optimizer.apply_gradients(zip(grads, [weights, bias], strict=True))
        return loss

    epochs = []
    for _ in range(args["epochs"]):
        rows, losses = [], []
        for ids, labels, pixels in data:
            losses.append(float(step(pixels, labels)))
            sums = tf.reduce_sum(tf.cast(pixels, tf.int64), axis=[1, 2, 3]).numpy()
            rows += [[int(i), int(y), int(s)] for i, y, s in zip(ids.numpy(), labels.numpy(),
                                                                  sums, strict=True)]
        epochs.append({"rows": rows, "loss": sum(losses) / max(len(losses), 1)})
    path = os.path.join(args["out"], f"{ctx.job_name}-{ctx.task_index}.json")
    with open(path, "w") as f:
        json.dump(epochs, f)
