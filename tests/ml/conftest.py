"""Tiny real models for the ml tests, built and saved once per session; the training
functions of ``ml_programs`` shipped by value."""

from __future__ import annotations

import pytest
from pyspark import cloudpickle

import ml_programs

# Node programs travel by value: executors and node processes do not have tests/ on their path.
cloudpickle.register_pickle_by_value(ml_programs)


@pytest.fixture(scope="session")
def keras_classifier():
    """A Keras 3 model: ``image`` (4 floats) -> ``scores`` (3 floats), fixed weights."""
    import keras

    keras.utils.set_random_seed(7)
    model = keras.Sequential([
        keras.Input(shape=(4,), name="image"),
        keras.layers.Dense(5, activation="relu", name="hidden"),
        keras.layers.Dense(3, name="dense_1"),
    ])
    return model


@pytest.fixture(scope="session")
def saved_classifier(keras_classifier, tmp_path_factory):
    """:func:`keras_classifier` exported as a SavedModel directory (output ``output_0``)."""
    path = tmp_path_factory.mktemp("models") / "classifier"
    keras_classifier.export(str(path), verbose=False)
    return str(path)


@pytest.fixture(scope="session")
def two_input_keras_file(tmp_path_factory):
    """A ``.keras`` file of a functional model with two named inputs and two named outputs:
    ``x`` (2 floats) and ``n`` (shape [batch, 1] of float32) -> ``total`` = sum(x) + n (shape
    [batch, 1]) and ``pair`` = (sum(x) + 1, sum(x) + 1) (shape [batch, 2])."""
    import keras

    x = keras.Input(shape=(2,), name="x")
    n = keras.Input(shape=(1,), name="n")
    total = keras.layers.Add(name="total_sum")(
        [keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")(x), n]
    )
    pair = keras.layers.Dense(2, kernel_initializer="ones", bias_initializer="ones")(x)
    model = keras.Model({"x": x, "n": n}, {"total": total, "pair": pair})
    path = tmp_path_factory.mktemp("models") / "two_inputs.keras"
    model.save(str(path))
    return str(path)


@pytest.fixture(scope="session")
def int32_identity(tmp_path_factory):
    """A SavedModel whose input ``n`` (int32, shape [batch]) is its output ``same``."""
    import tensorflow as tf

    class Identity(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="n")])
        def serve(self, n):
            return {"same": n}

    model = Identity()
    path = tmp_path_factory.mktemp("models") / "int32_identity"
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.serve})
    return str(path)
