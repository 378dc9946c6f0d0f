"""``ml.TFModel``: a saved TensorFlow model as a Spark ML ``Model``, alone, as a ``Pipeline``
stage after a ``VectorAssembler``, saved and loaded with its params and training summary. The
tests on ``any_spark`` run on a Spark Connect client too."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pyspark
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import VectorAssembler
from pyspark.ml.util import DefaultParamsWriter

from tfrecord_io import cluster, ml
from tfrecord_io.ml import TFTrainingSummary
from tfrecord_io.spark.jvm import is_connect

from ml_data import rows

SUMMARY = TFTrainingSummary(
    cluster.Metrics([
        cluster.MetricRecord("worker:0", 0, 1, 1700000000.5, {"loss": 0.9, "accuracy": 0.5}),
        cluster.MetricRecord("worker:1", 0, 1, 1700000000.6, {"loss": 0.8}),
        cluster.MetricRecord("worker:0", 1, None, 1700000001.25, {"loss": math.inf}),
        cluster.MetricRecord("worker:0", 1, 2, 1700000002.0, {"loss": 0.25}),
    ]),
    attempts=2, elapsed=31.5,
)


def scores_by_id(df) -> dict[int, list[float]]:
    return {r.id: r.scores for r in df.collect()}


def expected(keras_model, images) -> np.ndarray:
    return np.asarray(keras_model.predict_on_batch(np.asarray(images, np.float32)))


def test_transform_appends_the_model_outputs_like_predict(
    any_spark, keras_classifier, saved_classifier
):
    data = rows(200, seed=3)
    df = any_spark.createDataFrame(data, "id long, image array<float>").repartition(2)
    model = ml.TFModel(modelDir=saved_classifier, outputMapping={"output_0": "scores"},
                       batchSize=32)
    got = scores_by_id(model.transform(df))
    want = expected(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([got[i] for i in range(200)]), want, rtol=1e-5, atol=1e-6)


def test_transform_feeds_and_keeps_columns_whose_names_have_dots(
    spark, keras_classifier, saved_classifier
):
    data = rows(20, seed=8)
    df = spark.createDataFrame([(i, image, "a.b") for i, image in data],
                               "id long, image array<float>, source string")
    df = df.toDF("id", "pixel.value", "meta.source")
    model = ml.TFModel(modelDir=saved_classifier, inputMapping={"pixel.value": "image"},
                       outputMapping={"output_0": "scores"})
    out = model.transform(df)
    assert out.columns == ["id", "pixel.value", "meta.source", "scores"]
    want = expected(keras_classifier, [image for _, image in data])
    got = scores_by_id(out)
    np.testing.assert_allclose(np.array([got[i] for i in range(20)]), want, rtol=1e-5, atol=1e-6)


def test_a_pipeline_of_a_vector_assembler_and_a_tfmodel_scores_plain_columns(
    any_spark, keras_classifier, saved_classifier, tmp_path
):
    data = rows(50, seed=4)
    df = any_spark.createDataFrame([(i, *image) for i, image in data],
                               "id long, a float, b float, c float, d float")
    pipeline = Pipeline(stages=[
        VectorAssembler(inputCols=["a", "b", "c", "d"], outputCol="features"),
        ml.TFModel(modelDir=saved_classifier, inputMapping={"features": "image"},
                   outputMapping={"output_0": "scores"}),
    ])
    if is_connect(any_spark) and pyspark.__version__.startswith("3."):
        # Spark 3.5's Connect client runs none of Spark ML's own stages (from 4.0 it does): the
        # pipeline fails in VectorAssembler (a JVM stage), before it reaches the TFModel
        with pytest.raises(Exception, match=r"JVM_ATTRIBUTE_NOT_SUPPORTED.*_jdf"):
            pipeline.fit(df).transform(df).collect()
        return
    fitted = pipeline.fit(df)  # no estimator inside: fitting only collects the stages
    want = expected(keras_classifier, [image for _, image in data])
    got = scores_by_id(fitted.transform(df))
    np.testing.assert_allclose(np.array([got[i] for i in range(50)]), want, rtol=1e-5, atol=1e-6)

    fitted.write().save(str(tmp_path / "pipeline"))
    reloaded = PipelineModel.load(str(tmp_path / "pipeline"))
    assert reloaded.stages[1].getModelDir() == saved_classifier
    again = scores_by_id(reloaded.transform(df))
    assert again == got


def test_save_and_load_keep_the_params_and_not_the_model(saved_classifier, tmp_path):
    model = ml.TFModel(modelDir=saved_classifier, inputMapping={"image": "image"},
                       outputMapping={"output_0": "scores"}, batchSize=7)
    model.write().save(str(tmp_path / "tfmodel"))
    loaded = ml.TFModel.load(str(tmp_path / "tfmodel"))
    assert (loaded.getModelDir(), loaded.getInputMapping(), loaded.getOutputMapping(),
            loaded.getBatchSize(), loaded.getSignature()) == (
        saved_classifier, {"image": "image"}, {"output_0": "scores"}, 7, "serving_default")
    saved_files = [p.name for p in (tmp_path / "tfmodel").rglob("*") if p.is_file()]
    assert not any(name.endswith((".pb", ".keras", ".index")) for name in saved_files)


def test_a_relative_model_dir_is_made_absolute_when_set(
    spark, keras_classifier, saved_classifier, tmp_path, monkeypatch
):
    shutil.copytree(saved_classifier, tmp_path / "models" / "classifier")
    monkeypatch.chdir(tmp_path)
    model = ml.TFModel(modelDir="models/classifier", outputMapping={"output_0": "scores"})
    assert model.getModelDir() == str(tmp_path / "models" / "classifier")
    assert model.copy().setModelDir("models/classifier").getModelDir() == model.getModelDir()
    monkeypatch.chdir(tmp_path / "models")  # the model still names the directory set
    data = rows(20, seed=4)
    got = scores_by_id(model.transform(spark.createDataFrame(data, "id long, image array<float>")))
    want = expected(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([got[i] for i in range(20)]), want, rtol=1e-5, atol=1e-6)


def test_a_model_made_by_hand_has_no_summary_and_says_so(saved_classifier):
    model = ml.TFModel(modelDir=saved_classifier)
    assert not model.hasSummary
    with pytest.raises(RuntimeError, match="No training summary available for this TFModel"):
        _ = model.summary


def test_history_lists_a_metric_in_the_order_reported_of_every_node_or_one():
    assert SUMMARY.history("loss") == [0.9, 0.8, math.inf, 0.25]
    assert SUMMARY.history("loss", node="worker:1") == [0.8]
    assert SUMMARY.history("accuracy") == [0.5]
    assert SUMMARY.history("auc") == []


def test_the_summary_is_saved_and_loaded_with_the_model(any_spark, saved_classifier, tmp_path):
    model = ml.TFModel(modelDir=saved_classifier, batchSize=9).setSummary(SUMMARY)
    model.write().session(any_spark).save(str(tmp_path / "tfmodel"))
    loaded = ml.TFModel.read().session(any_spark).load(str(tmp_path / "tfmodel"))
    assert loaded.hasSummary
    assert loaded.summary == SUMMARY
    assert loaded.summary.metrics.to_pandas()["loss"].tolist() == [0.9, 0.8, math.inf, 0.25]
    assert (loaded.getModelDir(), loaded.getBatchSize()) == (saved_classifier, 9)


def test_a_copy_keeps_the_summary(saved_classifier):
    model = ml.TFModel(modelDir=saved_classifier).setSummary(SUMMARY)
    assert model.copy({model.batchSize: 3}).summary is SUMMARY


def test_a_pipeline_model_keeps_its_tfmodels_summary(spark, saved_classifier, tmp_path):
    df = spark.createDataFrame(rows(3), "id long, image array<float>")
    stage = ml.TFModel(modelDir=saved_classifier).setSummary(SUMMARY)
    Pipeline(stages=[stage]).fit(df).write().save(str(tmp_path / "pipeline"))
    assert PipelineModel.load(str(tmp_path / "pipeline")).stages[0].summary == SUMMARY


def test_a_model_saved_with_params_only_loads_without_a_summary(spark, saved_classifier,
                                                                tmp_path):
    model = ml.TFModel(modelDir=saved_classifier, batchSize=5)
    DefaultParamsWriter(model).save(str(tmp_path / "params-only"))  # an earlier version's save
    loaded = ml.TFModel.load(str(tmp_path / "params-only"))
    assert (loaded.getBatchSize(), loaded.hasSummary) == (5, False)


def test_overwrite_replaces_a_saved_model_and_its_summary(any_spark, saved_classifier, tmp_path):
    path = str(tmp_path / "tfmodel")
    ml.TFModel(modelDir=saved_classifier, batchSize=3).write().session(any_spark).save(path)
    model = ml.TFModel(modelDir=saved_classifier, batchSize=4).setSummary(SUMMARY)
    model.write().overwrite().session(any_spark).save(path)  # also over Spark Connect
    loaded = ml.TFModel.read().session(any_spark).load(path)
    assert (loaded.getBatchSize(), loaded.summary) == (4, SUMMARY)
    ml.TFModel(modelDir=saved_classifier, batchSize=5).write().overwrite().session(any_spark) \
        .save(path)
    loaded = ml.TFModel.read().session(any_spark).load(path)
    assert (loaded.getBatchSize(), loaded.hasSummary) == (5, False)
