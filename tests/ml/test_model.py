"""``ml.TFModel``: a saved TensorFlow model as a Spark ML ``Model``, alone, as a ``Pipeline``
stage after a ``VectorAssembler``, and saved and loaded with Spark ML's params writer."""

from __future__ import annotations

import numpy as np
from ml_data import rows
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import VectorAssembler

from tfrecord_io import ml


def scores_by_id(df) -> dict[int, list[float]]:
    return {r.id: r.scores for r in df.collect()}


def expected(keras_model, images) -> np.ndarray:
    return np.asarray(keras_model.predict_on_batch(np.asarray(images, np.float32)))


def test_transform_appends_the_model_outputs_like_predict(
    spark, keras_classifier, saved_classifier
):
    data = rows(200, seed=3)
    df = spark.createDataFrame(data, "id long, image array<float>").repartition(2)
    model = ml.TFModel(modelDir=saved_classifier, outputMapping={"output_0": "scores"},
                       batchSize=32)
    got = scores_by_id(model.transform(df))
    want = expected(keras_classifier, [image for _, image in data])
    np.testing.assert_allclose(np.array([got[i] for i in range(200)]), want, rtol=1e-5, atol=1e-6)


def test_a_pipeline_of_a_vector_assembler_and_a_tfmodel_scores_plain_columns(
    spark, keras_classifier, saved_classifier, tmp_path
):
    data = rows(50, seed=4)
    df = spark.createDataFrame([(i, *image) for i, image in data],
                               "id long, a float, b float, c float, d float")
    pipeline = Pipeline(stages=[
        VectorAssembler(inputCols=["a", "b", "c", "d"], outputCol="features"),
        ml.TFModel(modelDir=saved_classifier, inputMapping={"features": "image"},
                   outputMapping={"output_0": "scores"}),
    ])
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
