"""A node is described once: the driver's AttemptDescription (from the checked options) and the
task's NodeDescription travel as typed values, the node reads the same description back, and
its NodeContext is built from it. No Spark."""

from __future__ import annotations

import dataclasses
import os
import stat

from tfrecord_io.cluster.context import NodeContext
from tfrecord_io.cluster.description import DESCRIPTION_FILE, AttemptDescription, NodeDescription
from tfrecord_io.cluster.options import run_options
from tfrecord_io.cluster.roles import cluster_spec, roles, tf_config


def _node(tmp_path, role_index=1) -> NodeDescription:
    options = run_options(mode="sync", num_workers=2, log_dir=str(tmp_path / "logs"),
                          keras="legacy", tensorboard=False, reservation_timeout=60.0,
                          max_attempts=2, env={"A": "secret-of-env"}, input_mode="spark")
    attempt = AttemptDescription(options, cluster="c-1", driver="198.18.0.1:4000",
                                 control_key="c" * 64, feed_key="f" * 64, number=1,
                                 num_workers=2)
    all_roles = roles("sync", 2, 0, False)
    spec = cluster_spec(all_roles, ["198.18.0.11:5000", "198.18.0.12:5000"])
    role = all_roles[role_index]
    return NodeDescription(attempt=attempt, role=role, cluster_spec=spec,
                           tf_config=tf_config(spec, role), host="198.18.0.12",
                           parent_pid=4242, feed_fd=7)


def test_the_attempt_description_carries_the_checked_options(tmp_path):
    attempt = _node(tmp_path).attempt
    options = attempt.options
    assert (options.mode, options.num_workers, options.keras, options.input_mode) == (
        "sync", 2, "legacy", "spark")
    assert options.checkpoint_dir == str(tmp_path / "logs" / "checkpoints")
    assert options.env == {"A": "secret-of-env"} and attempt.number == 1


def test_the_node_reads_back_exactly_what_its_task_wrote(tmp_path):
    node = _node(tmp_path)
    node.write(str(tmp_path))
    assert NodeDescription.read(str(tmp_path)) == node


def test_the_description_file_is_readable_by_its_owner_only(tmp_path):
    _node(tmp_path).write(str(tmp_path))  # it holds the cluster's secret
    mode = stat.S_IMODE(os.stat(tmp_path / DESCRIPTION_FILE).st_mode)
    assert mode == 0o600


def test_the_node_context_is_built_from_the_description(tmp_path):
    node = _node(tmp_path)
    ctx = NodeContext(node)
    assert (ctx.job_name, ctx.task_index, ctx.is_chief, ctx.name) == (
        "worker", 1, False, "worker:1")
    assert (ctx.mode, ctx.num_workers, ctx.attempt) == ("sync", 2, 1)
    assert ctx.cluster_spec == node.cluster_spec and ctx.tf_config == node.tf_config
    assert ctx.tf_config["task"] == {"type": "worker", "index": 1}
    assert ctx.checkpoint_dir == node.attempt.options.checkpoint_dir
    assert ctx.log_dir == node.attempt.options.log_dir


def test_descriptions_are_frozen(tmp_path):
    node = _node(tmp_path)
    try:
        node.host = "elsewhere"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        return
    raise AssertionError("a NodeDescription could be changed")


def test_the_keys_and_the_env_never_show_in_a_repr(tmp_path):
    node = _node(tmp_path)
    for text in (repr(node.attempt), repr(node), str(node)):
        assert "c" * 64 not in text and "f" * 64 not in text
        assert "secret-of-env" not in text
