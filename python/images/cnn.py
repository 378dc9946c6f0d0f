"""The CNN of the image examples and its input pipeline, shared by every program here.

* :func:`decode`: PNG (or JPEG) bytes -> a ``[28, 28, 1]`` float image in [0, 1];
* :func:`augment`: a light random translation (pad by :data:`SHIFT` pixels, crop back at a
  random place); no flips, since a flipped digit is another digit or none;
* :func:`pairs`: serialized Examples -> batches of ``(image, label)`` in the workers'
  ``tf.data`` pipeline (parse, decode, augment when training, batch);
* :func:`seed`: the generators seeded, so that runs start from the same weights;
* :func:`build`: Conv 16 -> pool -> Conv 32 -> pool -> Dense 64 -> 10 logits, compiled with Adam;
* :func:`export`: a SavedModel whose ``serving_default`` signature takes the encoded files
  (input ``image``, ``tf.string``) and gives ``scores`` (10 logits) and ``prediction`` (the
  argmax, a double, as Spark ML's evaluators want it): what ``ml.predict`` runs on a DataFrame of
  the encoded images.

TensorFlow is imported inside the functions: they run on the cluster's nodes, after the
cluster has set TensorFlow up (``keras="legacy"``: ``tf.keras`` is tf-keras).
"""

from __future__ import annotations

import tempfile
from typing import Any

#: The images' side in pixels, and channels.
SIDE = 28
CHANNELS = 1
#: Classes (the digits).
CLASSES = 10
#: The largest random translation, in pixels, in each direction.
SHIFT = 2

#: The features of the records of ``tfrecord-io images`` (build_image_data.py's layout) used.
IMAGE_FEATURE = "image/encoded"
LABEL_FEATURE = "image/class/label"


def seed(value: int | None) -> None:
    """Seeds Python's, NumPy's and TensorFlow's generators with *value*, when it is given:
    runs then start from the same weights and draw their translations from the same sequence
    (the parallel pipeline may still hand them to other images)."""
    if value is None:
        return
    import tensorflow as tf

    tf.keras.utils.set_random_seed(value)


def decode(encoded: Any) -> Any:
    """One encoded image (a scalar ``tf.string``) as a ``[SIDE, SIDE, CHANNELS]`` float32
    tensor in [0, 1]."""
    import tensorflow as tf

    image = tf.io.decode_image(encoded, channels=CHANNELS, expand_animations=False)
    image = tf.ensure_shape(image, [SIDE, SIDE, CHANNELS])
    return tf.cast(image, tf.float32) / 255.0


def augment(image: Any) -> Any:
    """*image* moved by up to :data:`SHIFT` pixels in each direction (zero padding)."""
    import tensorflow as tf

    padded = tf.image.pad_to_bounding_box(image, SHIFT, SHIFT, SIDE + 2 * SHIFT,
                                          SIDE + 2 * SHIFT)
    return tf.image.random_crop(padded, [SIDE, SIDE, CHANNELS])


def pairs(records: Any, batch_size: int, *, training: bool, image: str = IMAGE_FEATURE,
          label: str = LABEL_FEATURE) -> Any:
    """Serialized Examples -> ``(images, labels)`` batches: parsed, decoded (and augmented
    when *training*) in parallel; training batches are all full (equal steps on every
    worker). The records are taken as they are: no auto-sharding (``ctx.dataset`` and the
    feed already give each worker its own)."""
    import tensorflow as tf

    spec = {image: tf.io.FixedLenFeature([], tf.string),
            label: tf.io.FixedLenFeature([], tf.int64)}

    def example(record: Any) -> tuple[Any, Any]:
        features = tf.io.parse_single_example(record, spec)
        pixels = decode(features[image])
        return (augment(pixels) if training else pixels), features[label]

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    batches = records.map(example, num_parallel_calls=tf.data.AUTOTUNE).batch(
        batch_size, drop_remainder=training)
    return batches.prefetch(tf.data.AUTOTUNE).with_options(options)


def build(learning_rate: float) -> Any:
    """The CNN, compiled (Adam at *learning_rate*, sparse cross-entropy on logits, accuracy);
    call it in the strategy's scope."""
    import tensorflow as tf

    layers = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(SIDE, SIDE, CHANNELS), name="pixels"),
        layers.Conv2D(16, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(CLASSES, name="scores"),
    ])
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def export(model: Any, path: str, *, is_chief: bool) -> None:
    """Save *model* as a SavedModel at *path* whose ``serving_default`` takes encoded images
    (``image``: ``tf.string`` of shape ``[batch]``) and gives ``scores`` (``[batch, 10]``
    logits) and ``prediction`` (``[batch]``, the best class as a double).

    Every worker of a multi-worker strategy must save (the save synchronizes them); only the
    chief's copy goes to *path*, the others' to a temporary directory."""
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image")])
    def serve(image: Any) -> dict[str, Any]:
        pixels = tf.map_fn(decode, image, fn_output_signature=tf.float32)
        scores = model(pixels, training=False)
        return {"scores": scores,
                "prediction": tf.cast(tf.argmax(scores, axis=1), tf.float64)}

    with tempfile.TemporaryDirectory() as scratch:
        tf.saved_model.save(model, path if is_chief else f"{scratch}/model",
                            signatures={"serving_default": serve})
