"""``ml.predict``: batch inference over DataFrames in Spark's Python workers, on the session's
``local-cluster`` (two executor JVMs), with real TensorFlow models; every prediction is checked
against the same model run in this process on the same rows. The tests on ``any_spark`` run on a
Spark Connect client too."""

from __future__ import annotations

import gc
import os
import shutil
import weakref
from collections.abc import Iterator
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql import types as T
from pyspark.sql.functions import pandas_udf

from tfrecord_io import ml
from tfrecord_io.errors import ModelError
from tfrecord_io.ml import loading
from tfrecord_io.ml.inference import chunks
from tfrecord_io.ml.loading import TensorInfo
from tfrecord_io.ml.tensors import to_input

from ml_data import rows


def expected_scores(model, images) -> np.ndarray:
    return np.asarray(model.predict_on_batch(np.asarray(images, np.float32)))


def test_predict_appends_columns_equal_to_the_model_run_in_one_process(
    any_spark, keras_classifier, saved_classifier
):
    data = rows(1000)
    df = any_spark.createDataFrame(data, "id long, image array<float>").repartition(5)
    out = ml.predict(df, saved_classifier, input_mapping={"image": "image"},
                     output_mapping={"output_0": "scores"}, batch_size=64)
    assert out.columns == ["id", "image", "scores"]
    assert out.schema["scores"].dataType == T.ArrayType(T.FloatType())
    got = sorted(out.collect(), key=lambda r: r.id)
    assert [r.id for r in got] == list(range(1000))  # every row once
    assert [r.image for r in got] == [image for _, image in data]  # input columns untouched
    want = expected_scores(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([r.scores for r in got]), want, rtol=1e-5, atol=1e-6)


def test_predict_reads_a_saved_model_from_hdfs(spark, hdfs, keras_classifier):
    from tfrecord_io import tf as tfr

    url = f"{hdfs.url}/ml/models/classifier"
    tfr.register_filesystems()
    keras_classifier.export(url, verbose=False)  # TensorFlow writes to HDFS through the plugin
    data = rows(300, seed=1)
    df = spark.createDataFrame(data, "id long, image array<float>").repartition(3)
    got = sorted(ml.predict(df, url, output_mapping={"output_0": "scores"}).collect(),
                 key=lambda r: r.id)
    want = expected_scores(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([r.scores for r in got]), want, rtol=1e-5, atol=1e-6)


def test_predict_feeds_vectors_and_scalars_to_a_keras_file_with_named_inputs_and_outputs(
    any_spark, two_input_keras_file
):
    df = any_spark.createDataFrame(
        [(Vectors.dense([1.0, 2.0]), 10), (Vectors.sparse(2, [1], [5.0]), 20),
         (Vectors.dense([0.5, 0.25]), 0)],
        ["features", "extra"],
    ).repartition(2)
    out = ml.predict(df, two_input_keras_file, input_mapping={"features": "x", "extra": "n"},
                     output_mapping={"total": "total", "pair": "pair"}, batch_size=2)
    assert out.schema["total"].dataType == T.FloatType()  # shape [batch, 1]: one value per row
    assert out.schema["pair"].dataType == T.ArrayType(T.FloatType())
    assert out.schema["features"] == df.schema["features"]  # the vector column passes through
    got = {r.extra: (r.total, r.pair, r.features) for r in out.collect()}
    assert got[10][:2] == (13.0, [4.0, 4.0])
    assert got[20][:2] == (25.0, [6.0, 6.0])
    assert got[0][:2] == (0.75, [1.75, 1.75])
    assert got[20][2] == Vectors.sparse(2, [1], [5.0])


def test_predict_takes_dots_and_backticks_in_column_names_as_part_of_the_names(
    any_spark, keras_classifier, saved_classifier
):
    data = rows(40, seed=7)
    df = any_spark.createDataFrame(
        [(i, image, f"camera.{i}", i * 2) for i, image in data],
        "id long, image array<float>, source string, n long",
    ).toDF("id", "pixel.value", "meta.source", "odd`name")
    out = ml.predict(df, saved_classifier, input_mapping={"pixel.value": "image"},
                     output_mapping={"output_0": "scores.v1"}, batch_size=16)
    assert out.columns == ["id", "pixel.value", "meta.source", "odd`name", "scores.v1"]
    got = sorted(out.collect(), key=lambda r: r[0])
    assert [tuple(r)[:4] for r in got] == [(i, image, f"camera.{i}", i * 2) for i, image in data]
    want = expected_scores(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([r[4] for r in got]), want, rtol=1e-5, atol=1e-6)


def test_predict_feeds_a_vector_column_whose_name_has_a_dot(spark, two_input_keras_file):
    df = spark.createDataFrame([(Vectors.dense([1.0, 2.0]), 10.0)], ["features.v", "extra.n"])
    out = ml.predict(df, two_input_keras_file, input_mapping={"features.v": "x", "extra.n": "n"},
                     output_mapping={"total": "total"})
    assert [r.total for r in out.collect()] == [13.0]


def test_predict_loads_the_model_once_per_python_worker(any_spark, saved_classifier):
    df = any_spark.createDataFrame(rows(400, seed=2), "id long, image array<float>").repartition(16)
    for _ in range(2):
        assert ml.predict(df, saved_classifier, batch_size=10).count() == 400

    def counts(batches: Iterator[pd.Series]) -> Iterator[pd.DataFrame]:
        # a scalar-iterator UDF like predict's (on every Spark), run by the same Python workers
        from tfrecord_io.ml import loading as worker_loading

        for batch in batches:
            loads = worker_loading.load_counts().get(saved_classifier, 0)
            yield pd.DataFrame({"pid": [os.getpid()] * len(batch), "loads": [loads] * len(batch)})

    probe = pandas_udf(counts, "struct<pid: long, loads: long>")
    seen = {r.p.pid: r.p.loads
            for r in any_spark.range(32).repartition(32).select(probe("id").alias("p")).collect()}
    assert seen and all(loads <= 1 for loads in seen.values()), seen
    assert sum(seen.values()) >= 1


def test_predict_refuses_a_column_the_dataframe_does_not_have(spark, saved_classifier):
    df = spark.createDataFrame(rows(2), "id long, image array<float>")
    with pytest.raises(ModelError, match=r"column 'pixels', which the DataFrame does not have"):
        ml.predict(df, saved_classifier, input_mapping={"pixels": "image"})


def test_predict_refuses_a_model_input_left_unmapped(spark, two_input_keras_file):
    df = spark.createDataFrame([([1.0, 2.0],)], "features array<float>")
    with pytest.raises(ModelError, match=r"also needs the inputs \['n'\]"):
        ml.predict(df, two_input_keras_file, input_mapping={"features": "x"})


def test_predict_refuses_an_output_the_model_does_not_have(spark, saved_classifier):
    df = spark.createDataFrame(rows(2), "id long, image array<float>")
    with pytest.raises(ModelError, match=r"output 'dense_9'.* has the outputs \['output_0'\]"):
        ml.predict(df, saved_classifier, output_mapping={"dense_9": "scores"})


def test_predict_refuses_a_text_column_for_a_float_input(spark, saved_classifier):
    df = spark.createDataFrame([("a",)], "image string")
    with pytest.raises(ModelError, match=r"column 'image' \(string\) cannot feed input 'image'"):
        ml.predict(df, saved_classifier)


def test_predict_refuses_two_columns_mapped_to_one_input(spark, two_input_keras_file):
    df = spark.createDataFrame([([1.0, 2.0], 1.0, 2.0)], "features array<float>, a float, b float")
    with pytest.raises(ModelError, match=r"maps the columns \['a', 'b'\] to one input 'n' of the "
                                         r"model at .*: map one column to each input"):
        ml.predict(df, two_input_keras_file, input_mapping={"features": "x", "a": "n", "b": "n"})


def test_predict_refuses_a_decimal_column_before_any_job_saying_to_cast_it_to_double(
    spark, two_input_keras_file
):
    df = spark.createDataFrame([([1.0, 2.0], Decimal("1.50"))],
                               "features array<float>, extra decimal(10,2)")
    with pytest.raises(ModelError, match=r"column 'extra' \(decimal\(10,2\)\) holds decimals, "
                                         r"which no model input takes .*cast the column to double"):
        ml.predict(df, two_input_keras_file, input_mapping={"features": "x", "extra": "n"})


def test_predict_refuses_a_new_column_that_differs_from_an_existing_one_only_in_case(
    spark, saved_classifier
):
    df = spark.createDataFrame([(0, [1.0, 2.0, 3.0, 4.0], 1.0)],
                               "id long, image array<float>, SCORES double")
    with pytest.raises(ModelError, match=r"would add column 'scores', which the DataFrame already "
                                         r"has as 'SCORES' .*: choose another name"):
        ml.predict(df, saved_classifier, output_mapping={"output_0": "scores"})


def test_predict_tells_columns_apart_by_case_when_the_session_is_case_sensitive(
    spark, keras_classifier, saved_classifier
):
    image = [1.0, 2.0, 3.0, 4.0]
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        df = spark.createDataFrame([(image, 1.0)], "image array<float>, SCORES double")
        out = ml.predict(df, saved_classifier, output_mapping={"output_0": "scores"})
        assert out.columns == ["image", "SCORES", "scores"]
        (row,) = out.collect()
    finally:
        spark.conf.unset("spark.sql.caseSensitive")
    assert row.SCORES == 1.0
    np.testing.assert_allclose(row.scores, expected_scores(keras_classifier, [image])[0],
                               rtol=1e-5, atol=1e-6)


def test_predict_names_a_missing_model_location(spark, tmp_path):
    df = spark.createDataFrame(rows(2), "id long, image array<float>")
    with pytest.raises(ModelError, match=f"no model at {tmp_path}/nothing"):
        ml.predict(df, str(tmp_path / "nothing"))


def test_predict_fails_the_job_naming_the_column_of_arrays_of_the_wrong_length(
    spark, saved_classifier
):
    df = spark.createDataFrame([(0, [1.0, 2.0, 3.0, 4.0]), (1, [1.0, 2.0, 3.0])],
                               "id long, image array<float>").coalesce(1)
    with pytest.raises(Exception, match=r"column 'image' .*has arrays of lengths 3 to 4"):
        ml.predict(df, saved_classifier).collect()


def test_predict_fails_the_job_naming_a_bigint_outside_the_range_of_an_int32_input(
    spark, int32_identity
):
    df = spark.createDataFrame([(1, 7), (2, 3_000_000_000)], "id long, n long").coalesce(1)
    with pytest.raises(Exception, match=r"column 'n' .*holds 3000000000, outside the range of "
                                        r"model input 'n' \(int32: -2147483648 to 2147483647\)"):
        ml.predict(df, int32_identity).collect()


INT32 = TensorInfo("n", "int32", (None,))
WHERE = "column 'n' (input 'n' of the model at /models/m)"


def test_to_input_refuses_a_fraction_for_an_integer_input():
    with pytest.raises(ModelError, match=r"column 'n' .*holds 2.9, which is not a whole number, "
                                         r"but model input 'n' takes whole numbers \(int32: "
                                         r"-2147483648 to 2147483647\): round the column"):
        to_input(pa.array([1.0, 2.9, -0.7]), INT32, WHERE)


def test_to_input_refuses_nan_for_an_integer_input():
    with pytest.raises(ModelError, match=r"holds nan, which is not a whole number"):
        to_input(pa.array([1.0, float("nan")]), INT32, WHERE)


def test_to_input_gives_whole_floats_to_an_integer_input_exactly():
    got = to_input(pa.array([2.0, -1.0, 2147483647.0, -2147483648.0]), INT32, WHERE)
    assert got.dtype == np.int32
    assert got.tolist() == [2, -1, 2147483647, -2147483648]


def test_to_input_refuses_a_whole_float_just_past_the_range_of_an_integer_input():
    with pytest.raises(ModelError, match=r"holds 2147483648.0, outside the range"):
        to_input(pa.array([2147483648.0]), INT32, WHERE)


def test_to_input_refuses_an_integer_in_an_array_outside_the_range_of_an_unsigned_input():
    info = TensorInfo("pixels", "uint8", (None, 2))
    with pytest.raises(ModelError, match=r"holds -1, outside the range of model input 'pixels' "
                                         r"\(uint8: 0 to 255\)"):
        to_input(pa.array([[0, 255], [-1, 3]], pa.list_(pa.int64())), info, WHERE)


def test_to_input_narrows_doubles_to_a_float32_input():
    got = to_input(pa.array([0.1, 1e10]), TensorInfo("x", "float32", (None,)), WHERE)
    assert got.dtype == np.float32
    assert got.tolist() == [np.float32(0.1), np.float32(1e10)]


def test_chunks_cut_the_columns_of_a_batch_into_equal_slices():
    columns = [pa.array(range(17)), pa.array([str(i) for i in range(17)])]
    out = list(chunks(columns, 4))
    assert [len(a) for a, _ in out] == [4, 4, 4, 4, 1]
    assert [v for a, _ in out for v in a.to_pylist()] == list(range(17))
    assert [v for _, b in out for v in b.to_pylist()] == [str(i) for i in range(17)]


def test_cached_gives_the_same_model_until_its_files_change(saved_classifier):
    version = loading.fingerprint(saved_classifier)
    first = loading.cached(saved_classifier, version=version)
    assert loading.cached(saved_classifier, version=version) is first
    assert loading.fingerprint(saved_classifier) == version


def save_constant_model(path, value: float) -> None:
    """A SavedModel at *path* whose output ``y`` is *value* for every ``x``."""
    import tensorflow as tf

    module = tf.Module()
    module.serve = tf.function(lambda x: {"y": x * 0 + value},
                               input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})


def test_cached_lets_go_of_the_older_versions_of_a_location_when_it_loads_a_new_one(
    tmp_path, saved_classifier
):
    other = loading.cached(saved_classifier, version=loading.fingerprint(saved_classifier))
    path = str(tmp_path / "model")
    save_constant_model(path, 1.0)
    first = weakref.ref(loading.cached(path, version="1"))
    save_constant_model(path, 2.0)  # retrained at the same location
    second = loading.cached(path, version="2")
    gc.collect()
    assert first() is None  # the cache no longer holds the replaced version
    assert second.predict({"x": np.zeros(1, np.float32)})["y"].tolist() == [2.0]
    assert loading.cached(path, version="2") is second
    # another location's model is kept
    assert loading.cached(saved_classifier, version=loading.fingerprint(saved_classifier)) is other


def test_load_names_a_keras_file_that_is_not_a_model(tmp_path):
    damaged = tmp_path / "model.keras"
    damaged.write_bytes(b"not a zip archive")
    with pytest.raises(ModelError, match=f"Keras could not load the model at {damaged}"):
        loading.load(str(damaged))


def test_load_names_a_directory_that_holds_no_saved_model(tmp_path):
    with pytest.raises(ModelError, match=f"{tmp_path} is a directory without saved_model.pb"):
        loading.load(str(tmp_path))


def save_function_model(path, function, dtype="float32", shape=(None,)) -> str:
    """A SavedModel at *path* whose output ``y`` is *function* of its input ``x`` (of *dtype*
    and *shape*); *path* as a string."""
    import tensorflow as tf

    module = tf.Module()
    module.serve = tf.function(lambda x: {"y": function(x)},
                               input_signature=[tf.TensorSpec(shape, dtype, name="x")])
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return str(path)


def test_predict_fails_the_job_when_the_model_is_replaced_after_predict_was_called(
    spark, tmp_path
):
    path = str(tmp_path / "model")
    save_constant_model(path, 1.0)
    version = loading.fingerprint(path)
    df = spark.range(0, 6, 1, 3).selectExpr("cast(id as float) as x")
    scored = ml.predict(df, path)  # the driver fingerprints version 1
    shutil.rmtree(path)
    save_constant_model(path, 2.0)  # retrained at the same location before the job runs
    assert loading.fingerprint(path) != version
    with pytest.raises(Exception, match=r"ModelError: the model at .*model changed since "
                                        r"predict\(\) was called.*call predict\(\) again"):
        scored.collect()  # no worker had version 1: none may score with version 2 instead
    assert {r.y for r in ml.predict(df, path).collect()} == {2.0}


def test_cached_with_verify_refuses_a_location_whose_files_changed(tmp_path):
    path = str(tmp_path / "model")
    save_constant_model(path, 1.0)
    with pytest.raises(ModelError, match=f"the model at {path} changed since predict"):
        loading.cached(path, version="an older fingerprint", verify=True)
    version = loading.fingerprint(path)
    model = loading.cached(path, version=version, verify=True)
    assert model.predict({"x": np.zeros(1, np.float32)})["y"].tolist() == [1.0]


def test_load_numbers_the_keras_outputs_that_share_a_layers_name_in_order(tmp_path):
    import keras

    sequence = keras.Input(shape=(3, 2), name="seq")
    out, h, c = keras.layers.LSTM(4, return_state=True, name="lstm")(sequence)
    model = keras.Model(sequence, [out, h, c])
    assert model.output_names == ["lstm", "lstm", "lstm"]  # what Keras 3 gives
    model.save(str(tmp_path / "lstm.keras"))
    served = loading.load(str(tmp_path / "lstm.keras"))
    assert list(served.outputs) == ["lstm", "lstm_1", "lstm_2"]
    batch = np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 10
    got = served.predict({"seq": batch})
    for name, want in zip(served.outputs, model.predict_on_batch(batch), strict=True):
        np.testing.assert_allclose(got[name], want, rtol=1e-6)


def test_predict_keeps_every_output_of_a_keras_layer_called_twice(spark, tmp_path):
    import keras

    x = keras.Input(shape=(2,), name="x")
    shared = keras.layers.Dense(1, name="shared", kernel_initializer="ones", use_bias=False)
    model = keras.Model(x, [shared(x), shared(keras.layers.Rescaling(2.0)(x))])
    assert model.output_names == ["shared", "shared"]
    model.save(str(tmp_path / "shared.keras"))
    df = spark.createDataFrame([([1.0, 2.0],), ([3.0, 4.0],)], "x array<float>")
    out = ml.predict(df, str(tmp_path / "shared.keras"))
    assert out.columns == ["x", "shared", "shared_1"]
    assert sorted((r.shared, r.shared_1) for r in out.collect()) == [(3.0, 6.0), (7.0, 14.0)]


@pytest.mark.parametrize(("dtype", "values"), [
    ("float64", [[0.1, 16777217.0], [-(2.0**53), 1e-300]]),  # not float32 numbers
    ("int64", [[3.0, 16777217.0], [-(2.0**53), 1.0]]),  # 2**24 + 1: odd, not a float32
])
def test_predict_feeds_a_vector_to_a_64_bit_input_without_rounding_it_to_float32(
    spark, tmp_path, dtype, values
):
    path = save_function_model(tmp_path / dtype, lambda x: x, dtype, (None, 2))
    df = spark.createDataFrame([(i, Vectors.dense(v)) for i, v in enumerate(values)],
                               ["id", "features"])
    out = ml.predict(df, path, input_mapping={"features": "x"})
    assert [r.y for r in out.orderBy("id").collect()] == values


def test_predict_fails_the_job_naming_the_vector_column_of_a_null_vector(spark, tmp_path):
    path = save_function_model(tmp_path / "model", lambda x: x, "float64", (None, 2))
    df = spark.createDataFrame([(Vectors.dense([3.0, 1.0]),), (None,)],
                               T.StructType([T.StructField("features", VectorUDT())]))
    with pytest.raises(Exception, match=r"ModelError: column 'features' \(input 'x' of the "
                                        r"model at .*model\) has null arrays"):
        ml.predict(df, path, input_mapping={"features": "x"}).collect()


def test_predict_fails_the_job_naming_the_vector_column_of_vectors_of_two_sizes(
    spark, tmp_path
):
    path = save_function_model(tmp_path / "model", lambda x: x, "float64", (None, None))
    df = spark.createDataFrame([(Vectors.dense([1.0, 2.0]),), (Vectors.dense([1.0, 2.0, 3.0]),)],
                               ["features"]).coalesce(1)
    with pytest.raises(Exception, match=r"ModelError: column 'features' \(input 'x' .*has "
                                        r"arrays of lengths 2 to 3"):
        ml.predict(df, path, input_mapping={"features": "x"}).collect()


def test_predict_reads_a_relative_local_path_on_every_executor(
    spark, tmp_path, monkeypatch, keras_classifier, saved_classifier
):
    shutil.copytree(saved_classifier, tmp_path / "models" / "classifier")
    monkeypatch.chdir(tmp_path)  # the executors run in working directories of their own
    data = rows(40, seed=3)
    df = spark.createDataFrame(data, "id long, image array<float>").repartition(4)
    out = ml.predict(df, "models/classifier", output_mapping={"output_0": "scores"})
    got = sorted(out.collect(), key=lambda r: r.id)
    want = expected_scores(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([r.scores for r in got]), want, rtol=1e-5, atol=1e-6)


def test_predict_fails_the_job_naming_an_output_of_one_value_per_batch(spark, tmp_path):
    import tensorflow as tf

    path = save_function_model(tmp_path / "model", tf.reduce_sum)
    df = spark.range(5).selectExpr("cast(id as float) as x").coalesce(1)
    with pytest.raises(Exception, match=r"ModelError: output 'y' of the model at .*model has "
                                        r"one value without a batch dimension for a batch of "
                                        r"5 rows: it must keep the batch dimension"):
        ml.predict(df, path).collect()


def test_predict_fails_the_job_naming_an_output_that_loses_the_batch_dimension_for_one_row(
    spark, tmp_path
):
    import tensorflow as tf

    path = save_function_model(tmp_path / "model", tf.squeeze, shape=(None, 1))
    df = spark.range(3).selectExpr("array(cast(id as float)) as x").coalesce(1)
    assert len(ml.predict(df, path, batch_size=3).collect()) == 3  # pieces of 3 rows keep it
    with pytest.raises(Exception, match=r"ModelError: output 'y' .* has one value without a "
                                        r"batch dimension for a batch of 1 rows"):
        ml.predict(df, path, batch_size=2).collect()  # the last piece has 1 row


def test_predict_keeps_two_columns_of_one_name_that_it_does_not_feed(spark, tmp_path):
    path = save_function_model(tmp_path / "model", lambda x: 2 * x)
    left = spark.range(4).selectExpr("id", "cast(id as float) as x")
    right = spark.range(4).selectExpr("id", "id * 10 as w")
    df = left.join(right, left.id == right.id)  # two columns named id, as joins make
    out = ml.predict(df, path)
    assert out.columns == ["id", "x", "id", "w", "y"]
    assert sorted(tuple(r) for r in out.collect()) == [
        (i, float(i), i, i * 10, 2.0 * i) for i in range(4)
    ]


def test_predict_refuses_to_feed_a_column_the_dataframe_has_twice(spark, tmp_path):
    path = save_function_model(tmp_path / "model", lambda x: 2 * x)
    left = spark.range(2).selectExpr("id", "cast(id as float) as x")
    right = spark.range(2).selectExpr("id", "cast(id as float) as X")
    df = left.join(right, "id")  # x and X: one name, as Spark compares names by default
    with pytest.raises(ModelError, match=r"input_mapping names column 'x', which the DataFrame "
                                         r"has 2 times \(Spark column names ignore case\): "
                                         r"rename or drop the others"):
        ml.predict(df, path)


def test_predict_without_input_mapping_names_the_model_input_that_no_column_feeds(
    spark, saved_classifier
):
    df = spark.createDataFrame(rows(2), "id long, pixels array<float>")
    with pytest.raises(ModelError, match=r"the model at .*classifier takes the input 'image', "
                                         r"which is fed from the column of that name when no "
                                         r"input_mapping is given, but the DataFrame has no "
                                         r"column 'image' \(it has \['id', 'pixels'\]\): pass "
                                         r"input_mapping=\{column: 'image'\}"):
        ml.predict(df, saved_classifier)
