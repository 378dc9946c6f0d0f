"""tfrecord_io.tf.infer_features and `tfrecord-io schema` decide alike: both render the one
inference of tfrecord_io.example.spec (FixedLenFeature where the CLI prints FixedLenFeature,
RaggedFeature where it prints VarLenFeature)."""

from __future__ import annotations

import json

import numpy as np
import tensorflow as tf

from tfrecord_io import cli, records
from tfrecord_io import tf as tfr
from tfrecord_io.example import encode_example


def test_infer_features_and_the_schema_command_emit_the_same_spec(tmp_path, capsys):
    recs = []
    for i in range(20):
        features = {
            "id": i,
            "vec": np.arange(4, dtype=np.float32) + i,
            "label": f"l{i % 3}",
            "tokens": list(range(i % 4)),
            "blob": bytes([i]) * 3,
        }
        if i % 3:
            features["sometimes"] = float(i)
        recs.append(encode_example(features))
    path = str(tmp_path / "data.tfrecord")
    records.write(path, recs)

    assert cli.main(["schema", "--json", path]) == 0
    printed = json.loads(capsys.readouterr().out)["feature_spec"]
    inferred = tfr.infer_features(recs)

    as_source = {}
    for name, feature in inferred.items():
        dtype = f"tf.{feature.dtype.name}"
        if isinstance(feature, tf.io.FixedLenFeature):
            as_source[name] = f"tf.io.FixedLenFeature({list(feature.shape)}, {dtype})"
        else:
            assert isinstance(feature, tf.io.RaggedFeature)
            as_source[name] = f"tf.io.VarLenFeature({dtype})"
    assert as_source == printed
    assert printed["vec"] == "tf.io.FixedLenFeature([4], tf.float32)"
    assert printed["sometimes"] == "tf.io.VarLenFeature(tf.float32)"
