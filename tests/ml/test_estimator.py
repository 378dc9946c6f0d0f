"""``ml.TFEstimator``: fitting trains on a real TensorFlow cluster on the session's
``local-cluster`` (sync or parameter-server mode), fed from the DataFrame, and gives a
``TFModel`` of the exported model with the training's summary; it works as a ``Pipeline``
stage (after a pretrained ``TFModel``: transfer learning) and under ``CrossValidator`` with a
``ParamGridBuilder`` grid over a ``train_fn`` hyper-parameter."""

from __future__ import annotations

import time

import numpy as np
import pytest
from pyspark.ml import Pipeline
from pyspark.ml.evaluation import RegressionEvaluator
from pyspark.ml.tuning import CrossValidator, CrossValidatorModel, ParamGridBuilder
from pyspark.sql import functions as F

from tfrecord_io import ml
from tfrecord_io.errors import ModelError

import ml_programs
from ml_data import rows

LINEAR = {"learning_rate": 0.1, "features": "features", "label": "label", "width": 3}


def serve(model_dir: str, features: np.ndarray) -> np.ndarray:
    """The exported model's predictions, computed in this process."""
    import tensorflow as tf

    signature = tf.saved_model.load(model_dir).signatures["serving_default"]
    return signature(features=tf.constant(features, tf.float32))["prediction"].numpy().reshape(-1)


def test_args_become_params_that_a_grid_can_vary():
    estimator = ml.TFEstimator(ml_programs.train_linear, LINEAR, numWorkers=1)
    rate = estimator.getParam("learning_rate")
    assert estimator.getOrDefault(rate) == 0.1
    grid = ParamGridBuilder().addGrid(rate, [0.01, 0.5]).build()
    copies = [estimator.copy(point) for point in grid]
    assert [c.getArgs()["learning_rate"] for c in copies] == [0.01, 0.5]
    assert estimator.getArgs() == LINEAR  # the original is unchanged


def test_every_param_has_a_getter_and_a_setter_that_round_trip():
    estimator = ml.TFEstimator(ml_programs.train_linear, LINEAR)
    values = {
        "exportDir": "/models", "logDir": "/logs", "numWorkers": 3, "numPs": 2, "epochs": 4,
        "mode": "ps", "keras": "legacy", "featureCols": ["a", "b"],
        "validationIndicatorCol": "is_val", "validationEpochs": 2, "timeout": 90.5,
        "tensorboard": True, "env": {"TF_CPP_MIN_LOG_LEVEL": "3"}, "maxAttempts": 3,
        "inputMode": "tensorflow",
        "inputMapping": {"a": "x"}, "outputMapping": {"y": "b"}, "batchSize": 32,
        "signature": "serve",
    }
    fixed = {param.name for param in estimator.params} - set(LINEAR)
    assert fixed == set(values)  # every param is exercised
    for name, value in values.items():
        cap = name[0].upper() + name[1:]
        assert getattr(estimator, f"set{cap}")(value) is estimator
        assert getattr(estimator, f"get{cap}")() == value, name


def test_the_defaults_are_a_sync_cluster_of_two_workers_without_limits():
    estimator = ml.TFEstimator(ml_programs.train_linear, LINEAR)
    assert (
        estimator.getNumWorkers(),
        estimator.getNumPs(),
        estimator.getMode(),
        estimator.getEpochs(),
        estimator.getTimeout(),
        estimator.getTensorboard(),
        estimator.getEnv(),
        estimator.getExportDir(),
    ) == (2, 0, "sync", 1, None, False, {}, None)


def test_params_out_of_range_are_refused_when_set():
    estimator = ml.TFEstimator(ml_programs.train_linear, LINEAR)
    with pytest.raises(ValueError, match="expected an int >= 0"):
        estimator.setNumPs(-1)
    with pytest.raises(ValueError, match="expected a number > 0"):
        estimator.setTimeout(0)
    with pytest.raises(ValueError, match="expected one of"):
        estimator.setMode("async")


@pytest.mark.parametrize(("params", "message"), [
    ({"mode": "ps"}, r"mode='ps' needs numPs >= 1"),
    ({"numPs": 1}, r"numPs=1 needs mode='ps'"),
    ({"tensorboard": True}, r"tensorboard=True needs a logDir"),
])
def test_fit_refuses_a_cluster_that_cannot_start_before_starting_it(spark, params, message):
    df = spark.createDataFrame([([1.0, 2.0, 3.0], 1.0)], "features array<float>, label float")
    estimator = ml.TFEstimator(ml_programs.train_linear, LINEAR, numWorkers=1, **params)
    with pytest.raises(ValueError, match=message):
        estimator.fit(df)


def test_an_args_key_that_cannot_be_a_param_is_refused():
    with pytest.raises(ValueError, match=r"args key 'epochs' cannot be a hyper-parameter"):
        ml.TFEstimator(ml_programs.train_linear, {"epochs": 3})
    with pytest.raises(ValueError, match=r"args key 'batchSize' cannot be a hyper-parameter"):
        ml.TFEstimator(ml_programs.train_linear, {"batchSize": 3})


def test_a_pipeline_of_a_pretrained_tfmodel_and_a_tfestimator_trains_on_extracted_features(
    spark, saved_classifier
):
    data = rows(400, seed=5)
    df = spark.createDataFrame(data, "id long, image array<float>").repartition(3)
    extractor = ml.TFModel(modelDir=saved_classifier, outputMapping={"output_0": "features"})
    # The target is linear in the extracted features: a Dense(1) on top can learn it.
    target = ml.TFModel(modelDir=saved_classifier, outputMapping={"output_0": "f"})
    df = target.transform(df).select(
        "id", "image", (F.col("f")[0] - 2 * F.col("f")[1] + 0.5 * F.col("f")[2]).alias("label")
    ).cache()
    estimator = ml.TFEstimator(
        ml_programs.train_linear, LINEAR, numWorkers=2, epochs=5, batchSize=16, keras="legacy",
        featureCols=["features", "label"], outputMapping={"prediction": "prediction"},
    )
    fitted = Pipeline(stages=[extractor, estimator]).fit(df)
    tf_model = fitted.stages[1]
    assert isinstance(tf_model, ml.TFModel)
    scored = sorted(fitted.transform(df).collect(), key=lambda r: r.id)
    assert [r.id for r in scored] == list(range(400))
    features = np.array([r.features for r in scored], np.float32)
    got = np.array([r.prediction for r in scored])
    np.testing.assert_allclose(got, serve(tf_model.getModelDir(), features), rtol=1e-5, atol=1e-5)
    labels = np.array([r.label for r in scored])
    assert np.sqrt(np.mean((got - labels) ** 2)) < 0.3 * np.std(labels)  # it learned


def test_cross_validation_over_a_two_point_grid_picks_the_learning_rate_that_fits(spark):
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, size=(240, 3)).astype(np.float32)
    y = x @ np.array([2.0, -1.0, 0.5], np.float32) + 0.25
    df = spark.createDataFrame(
        [([float(v) for v in xi], float(yi)) for xi, yi in zip(x, y, strict=True)],
        "features array<float>, label float",
    ).repartition(2)
    # One worker per fit: CrossValidator makes 2 folds x 2 points + 1 final fit = 5 clusters.
    estimator = ml.TFEstimator(
        ml_programs.train_linear, LINEAR, numWorkers=1, epochs=3, batchSize=8, keras="legacy",
        outputMapping={"prediction": "prediction"},
    )
    rate = estimator.getParam("learning_rate")
    grid = ParamGridBuilder().addGrid(rate, [0.0, 0.2]).build()
    evaluator = RegressionEvaluator(predictionCol="prediction", labelCol="label", metricName="rmse")
    cv = CrossValidator(estimator=estimator, estimatorParamMaps=grid, evaluator=evaluator,
                        numFolds=2, seed=3)
    cv_model = cv.fit(df)
    assert isinstance(cv_model, CrossValidatorModel)
    assert len(cv_model.avgMetrics) == 2
    assert cv_model.avgMetrics[1] < 0.5 * cv_model.avgMetrics[0]  # lr 0 learns nothing
    best = cv_model.bestModel
    assert isinstance(best, ml.TFModel)
    rmse = evaluator.evaluate(cv_model.transform(df))
    assert rmse == pytest.approx(evaluator.evaluate(best.transform(df)))
    assert rmse < 0.5 * float(np.std(y))
    # why it won: the final fit's per-epoch losses (ctx.keras_callback()), falling
    assert best.hasSummary and best.summary.attempts == 1
    losses = best.summary.history("loss", node="worker:0")
    assert len(losses) == 3
    assert losses[-1] < losses[0]


def test_input_mode_tensorflow_writes_the_rows_as_files_that_train_fn_reads(
        any_spark, tmp_path):
    df = ps_data(any_spark, 96)
    estimator = ml.TFEstimator(
        ml_programs.train_linear_from_files, LINEAR, numWorkers=1, epochs=4, batchSize=8,
        keras="legacy", inputMode="tensorflow", exportDir=str(tmp_path),
        outputMapping={"prediction": "prediction"},
    )
    model = estimator.fit(df)
    assert model.summary.history("records") == [96]  # every row, from the files
    losses = model.summary.history("loss")
    assert len(losses) == 4 and losses[-1] < 0.5 * losses[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [model.getModelDir().split("/")[-1]]


def test_a_fed_fit_trains_on_the_rows_of_a_connect_dataframe(connect_spark, tmp_path):
    df = ps_data(connect_spark, 96)
    estimator = ml.TFEstimator(
        ml_programs.train_linear, LINEAR, numWorkers=1, epochs=4, batchSize=8, keras="legacy",
        inputMode="spark", exportDir=str(tmp_path), outputMapping={"prediction": "prediction"},
    )
    model = estimator.fit(df)
    losses = model.summary.history("loss")
    assert len(losses) == 4 and losses[-1] < 0.5 * losses[0]
    predictions = model.transform(df).collect()
    assert len(predictions) == 96 and all(np.isfinite(r.prediction) for r in predictions)


def test_max_attempts_restarts_the_cluster_and_feeds_the_rows_again(spark, tmp_path):
    df = ps_data(spark, 96).cache()
    estimator = ml.TFEstimator(
        ml_programs.train_linear_failing_once, LINEAR, numWorkers=1, epochs=3, batchSize=8,
        keras="legacy", maxAttempts=2, exportDir=str(tmp_path),
        outputMapping={"prediction": "prediction"},
    )
    model = estimator.fit(df)
    assert model.summary.attempts == 2
    assert len(model.summary.history("loss")) == 3  # the second attempt's epochs, all fed
    scored = model.transform(df).collect()
    labels = np.array([r.label for r in scored])
    got = np.array([r.prediction for r in scored])
    assert np.sqrt(np.mean((got - labels) ** 2)) < 0.5 * np.std(labels)


def ps_data(spark, rows_count=160):
    rng = np.random.default_rng(8)
    x = rng.uniform(-1, 1, size=(rows_count, 3)).astype(np.float32)
    y = x @ np.array([2.0, -1.0, 0.5], np.float32) + 0.25
    return spark.createDataFrame(
        [([float(v) for v in xi], float(yi)) for xi, yi in zip(x, y, strict=True)],
        "features array<float>, label float",
    ).repartition(2)


def test_ps_mode_trains_on_the_parameter_server_and_keeps_the_reported_losses(spark, tmp_path):
    df = ps_data(spark).cache()
    estimator = ml.TFEstimator(
        ml_programs.train_linear_ps, {**LINEAR, "learning_rate": 0.2}, mode="ps", numPs=1,
        numWorkers=1, epochs=3, batchSize=8, outputMapping={"prediction": "prediction"},
        exportDir=str(tmp_path / "models"),
    )
    model = estimator.fit(df)
    summary = model.summary
    assert summary.attempts == 1
    assert [(r.node, r.step) for r in summary.metrics] == [("chief:0", e) for e in (1, 2, 3)]
    losses = summary.history("loss")
    assert losses[2] < 0.5 * losses[0]  # it learned, step after step on the workers
    scored = model.transform(df).collect()
    features = np.array([r.features for r in scored], np.float32)
    got = np.array([r.prediction for r in scored])
    np.testing.assert_allclose(got, serve(model.getModelDir(), features), rtol=1e-5, atol=1e-5)
    labels = np.array([r.label for r in scored])
    assert np.sqrt(np.mean((got - labels) ** 2)) < 0.5 * np.std(labels)

    model.write().save(str(tmp_path / "saved"))
    loaded = ml.TFModel.load(str(tmp_path / "saved"))
    assert loaded.hasSummary
    assert loaded.summary == summary
    assert loaded.getModelDir() == model.getModelDir()


def test_a_fit_past_its_timeout_stops_the_cluster_and_says_so(spark, tmp_path):
    df = spark.createDataFrame([([1.0, 2.0, 3.0], 1.0)] * 4, "features array<float>, label float")
    estimator = ml.TFEstimator(ml_programs.train_until_stopped, numWorkers=1, timeout=1,
                               exportDir=str(tmp_path))
    begun = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not finish within timeout=1.0 s: its cluster "
                                           r"was stopped"):
        estimator.fit(df)
    assert time.monotonic() - begun < 300  # not the node's 600 s sleep


def test_fit_feeds_columns_and_a_validation_indicator_whose_names_have_dots(spark, tmp_path):
    df = spark.createDataFrame(
        [(1.0, False), (2.0, None), (3.0, False), (10.0, True), (20.0, True)],
        "x float, v boolean",
    ).toDF("f.x", "is.validation")
    estimator = ml.TFEstimator(ml_programs.train_summing_feeds, {"column": "f.x"}, numWorkers=1,
                               validationIndicatorCol="is.validation", exportDir=str(tmp_path))
    model = estimator.fit(df)
    assert model.summary.history("train") == [6.0]  # the rows not marked (null: not marked)
    assert model.summary.history("validation") == [30.0]


def test_fit_names_the_export_dir_when_train_fn_saves_nothing(spark, tmp_path):
    df = spark.createDataFrame([(float(i), float(i)) for i in range(20)], "x float, label float")
    estimator = ml.TFEstimator(ml_programs.train_nothing_saved, numWorkers=1,
                               exportDir=str(tmp_path))
    with pytest.raises(ModelError, match=rf"saved no model at {tmp_path}/TFEstimator_\w+"):
        estimator.fit(df)


def test_a_relative_export_dir_is_taken_from_the_drivers_working_directory(
    spark, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the chief saves from a working directory of its own
    estimator = ml.TFEstimator(
        ml_programs.train_linear, LINEAR, numWorkers=1, epochs=1, batchSize=8, keras="legacy",
        exportDir="models", outputMapping={"prediction": "prediction"},
    )
    assert estimator.getExportDir() == str(tmp_path / "models")
    model = estimator.fit(ps_data(spark, 32))
    assert model.getModelDir().startswith(f"{tmp_path}/models/")
    saved = tmp_path / "models" / model.getModelDir().rsplit("/", 1)[-1]
    assert (saved / "saved_model.pb").exists()
    assert len(model.transform(ps_data(spark, 32)).collect()) == 32


def test_a_failed_fit_deletes_what_its_chief_saved_in_its_export_dir(spark, tmp_path):
    df = spark.createDataFrame([(float(i), float(i)) for i in range(20)], "x float, label float")
    estimator = ml.TFEstimator(ml_programs.train_saving_then_failing, numWorkers=1,
                               exportDir=str(tmp_path / "models"))
    with pytest.raises(Exception, match="planned failure after saving"):
        estimator.fit(df)
    assert not (tmp_path / "models").exists() or list((tmp_path / "models").iterdir()) == []


def test_an_empty_export_dir_is_refused_when_set():
    estimator = ml.TFEstimator(ml_programs.train_linear, LINEAR)
    with pytest.raises(ValueError, match="exportDir must be a directory's path or URL, not ''"):
        estimator.setExportDir("")
