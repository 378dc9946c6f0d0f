"""``ml.predict``: batch inference over DataFrames in Spark's Python workers, on the session's
``local-cluster`` (two executor JVMs), with real TensorFlow models; every prediction is checked
against the same model run in this process on the same rows. The tests on ``any_spark`` run on a
Spark Connect client too."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark.ml.linalg import Vectors
from pyspark.sql import types as T
from pyspark.sql.functions import pandas_udf

from tfrecord_io import ml
from tfrecord_io.errors import ModelError
from tfrecord_io.ml import loading
from tfrecord_io.ml.inference import chunks

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


def test_load_names_a_keras_file_that_is_not_a_model(tmp_path):
    damaged = tmp_path / "model.keras"
    damaged.write_bytes(b"not a zip archive")
    with pytest.raises(ModelError, match=f"Keras could not load the model at {damaged}"):
        loading.load(str(damaged))


def test_load_names_a_directory_that_holds_no_saved_model(tmp_path):
    with pytest.raises(ModelError, match=f"{tmp_path} is a directory without saved_model.pb"):
        loading.load(str(tmp_path))
