"""cluster.run in ps mode (ParameterServerStrategy): ps and workers serve, the chief
coordinates, and ctx.dataset gives every worker an exactly-once share of HDFS files."""

from __future__ import annotations

import json

import pytest

from tfrecord_io import cluster

import cluster_programs
from datafiles import write_record_shards
from processes import listening_ports, node_processes, spec_ports

# five files of unequal length: 145 records
SIZES = [30, 20, 25, 40, 30]


@pytest.fixture(scope="module")
def hdfs_records(hdfs):
    base = f"{hdfs.url}/cluster/ps-input"
    expected = write_record_shards(base, SIZES)
    return base, expected


@pytest.fixture(scope="module")
def ps_run(sc, hdfs_records, tmp_path_factory):
    base, expected = hdfs_records
    out = tmp_path_factory.mktemp("ps")
    c = cluster.run(sc, cluster_programs.ps_read_all, {"out": str(out), "paths": base},
                    num_workers=2, num_ps=1, mode="ps")
    with c:
        c.wait(timeout=300)
    result = json.loads((out / "read.json").read_text())
    result["expected"] = expected
    result["left"] = node_processes(c.name)
    result["listening"] = listening_ports()
    return result


def test_the_chief_runs_main_fun_as_coordinator(ps_run):
    assert ps_run["job_name"] == "chief"
    spec = ps_run["cluster_spec"]
    assert sorted(spec) == ["chief", "ps", "worker"]
    assert [len(spec["chief"]), len(spec["ps"]), len(spec["worker"])] == [1, 1, 2]


def test_remote_workers_read_every_hdfs_record_exactly_once(ps_run):
    read = ps_run["read"]
    assert len(read) == len(ps_run["expected"])
    assert sorted(read) == sorted(ps_run["expected"])


def test_servers_are_stopped_when_the_coordinator_finishes(ps_run):
    assert ps_run["left"] == []
    assert spec_ports(ps_run["cluster_spec"]) & ps_run["listening"] == set()


def test_ps_mode_needs_a_parameter_server(sc):
    with pytest.raises(ValueError, match="num_ps >= 1"):
        cluster.run(sc, cluster_programs.record, num_workers=2, mode="ps")
