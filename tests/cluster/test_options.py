"""cluster.run's options are checked once, before anything starts (RunOptions)."""

from __future__ import annotations

import math
import os

import pytest

from tfrecord_io.cluster.options import NODE_VARIABLES, RunOptions, run_options

GOOD = {"mode": "sync", "num_workers": 2, "log_dir": None, "keras": "default",
        "tensorboard": False, "reservation_timeout": 60, "max_attempts": 1, "env": None,
        "input_mode": "tensorflow"}


def _options(**changes) -> RunOptions:
    return run_options(**{**GOOD, **changes})


def test_good_options_come_back_typed():
    options = _options(reservation_timeout=5, env={"A": "1"}, input_mode="spark")
    assert (options.reservation_timeout, options.env, options.input_mode) == (5.0, {"A": "1"},
                                                                             "spark")
    assert isinstance(options.reservation_timeout, float)


@pytest.mark.parametrize("changes, message", [
    ({"input_mode": "files"}, r"input_mode must be one of \('tensorflow', 'spark'\), not 'files'"),
    ({"keras": "tf2"}, r"keras must be one of \('default', 'legacy'\), not 'tf2'"),
    ({"tensorboard": True}, "tensorboard=True needs a log_dir"),
    ({"reservation_timeout": 0}, r"reservation_timeout must be a number of seconds > 0 "
                                 r"\(math.inf: no limit\), not 0"),
    ({"reservation_timeout": "60"}, r"reservation_timeout must be a number of seconds > 0 "
                                    r"\(math.inf: no limit\), not '60'"),
    ({"log_dir": ""}, "log_dir must be a path or URL, or None, not ''"),
    ({"max_attempts": True}, "max_attempts must be an int >= 1, not True"),
    ({"max_attempts": 0}, "max_attempts must be an int >= 1, not 0"),
    ({"env": {"A": 1}}, r"env must map str to str, not str to int \(at 'A'\)"),
    ({"min_workers": 0}, "min_workers must be an int from 1 to num_workers=2, not 0"),
    ({"min_workers": 3}, "min_workers must be an int from 1 to num_workers=2, not 3"),
    ({"min_workers": True}, "min_workers must be an int from 1 to num_workers=2, not True"),
])
def test_a_bad_option_is_refused_saying_what_it_accepts(changes, message):
    with pytest.raises(ValueError, match=message):
        _options(**changes)


@pytest.mark.parametrize("secret", [b"wJalrXUtnFEMI/K7MDENG", ["wJalrXUtnFEMI/K7MDENG"]])
def test_a_bad_env_value_is_refused_without_showing_it(secret):
    with pytest.raises(ValueError) as refused:
        _options(env={"AWS_SECRET_ACCESS_KEY": secret})
    assert "AWS_SECRET_ACCESS_KEY" in str(refused.value)
    assert "wJalrXUtnFEMI" not in str(refused.value)


@pytest.mark.parametrize("name", sorted(NODE_VARIABLES))
def test_env_may_not_set_a_variable_the_cluster_sets_in_every_node_itself(name):
    with pytest.raises(ValueError, match=f"env may not set {name}: the cluster sets it in every "
                                         "node process itself, over env"):
        _options(env={"A": "1", name: "mine"})


def test_env_setting_several_variables_the_cluster_sets_is_refused_naming_each():
    with pytest.raises(ValueError) as refused:
        _options(env={"TF_CONFIG": "{}", "PYTHONUNBUFFERED": "0"})
    assert str(refused.value).startswith("env may not set TF_CONFIG, PYTHONUNBUFFERED: the "
                                         "cluster sets them in every node process itself")
    assert "TF_CONFIG: each node's cluster spec" in str(refused.value)


@pytest.mark.parametrize("name", ["A=B", "A\0B", ""])
def test_env_with_a_name_no_process_environment_can_hold_is_refused_naming_it(name):
    with pytest.raises(ValueError) as refused:
        _options(env={name: "1"})
    assert str(refused.value) == (f"env has a variable named {name!r}, which no process "
                                  "environment can hold: a name must be non-empty, without '=' "
                                  "or NUL characters")


def test_env_with_a_nul_in_a_value_is_refused_naming_its_variable_not_the_value():
    with pytest.raises(ValueError) as refused:
        _options(env={"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI\0K7MDENG"})
    assert str(refused.value) == ("env's value of 'AWS_SECRET_ACCESS_KEY' holds a NUL character, "
                                  "which no process environment can hold")


def test_an_infinite_heartbeat_timeout_is_refused_saying_what_it_would_do():
    # No node would ever be lost, and an attempt that failed would wait forever for one gone
    # silent beside it (Attempt.finish waits for a quiet node's heartbeat timeout).
    with pytest.raises(ValueError, match=r"heartbeat_timeout must be a finite number of seconds "
                                         r">= 5, not inf: a node gone silent would never be lost"):
        _options(heartbeat_timeout=math.inf)


@pytest.mark.parametrize("option", ["reservation_timeout", "heartbeat_timeout"])
def test_a_timeout_beyond_a_float_s_range_is_refused_with_a_value_error(option):
    with pytest.raises(ValueError, match=f"{option} must be a .* not an int of 1329 bits, beyond "
                                         "a float's range"):
        _options(**{option: 10**400})


def test_an_infinite_reservation_timeout_is_kept_as_no_limit():
    assert _options(reservation_timeout=math.inf).reservation_timeout == math.inf


def test_without_min_workers_every_attempt_has_num_workers():
    assert _options().fewest_workers == 2
    assert _options(min_workers=1).fewest_workers == 1


def test_checkpoints_go_under_the_log_dir(tmp_path):
    options = _options(log_dir=tmp_path / "logs")
    assert options.log_dir == str(tmp_path / "logs")
    assert options.checkpoint_dir == str(tmp_path / "logs" / "checkpoints")


def test_a_relative_log_dir_is_made_absolute_on_the_driver(tmp_path, monkeypatch):
    # Each node runs in a working directory of its own, deleted when its task ends.
    monkeypatch.chdir(tmp_path)
    assert _options(log_dir="logs").log_dir == str(tmp_path / "logs")
    assert _options(log_dir="~/logs").log_dir == os.path.expanduser("~/logs")
    assert _options(log_dir="hdfs:///logs").log_dir == "hdfs:///logs"
    assert _options(log_dir="file:/x/logs").log_dir == "file:/x/logs"


def test_without_a_log_dir_each_cluster_checkpoints_to_a_fresh_local_path():
    first, second = _options().checkpoint_dir, _options().checkpoint_dir
    assert first != second
    assert not os.path.exists(first)
    assert os.path.basename(first) == "checkpoints"
