"""A Spark application whose executors have fake GPUs (a discovery script reports addresses;
no GPU needed): runs a two-worker cluster and prints each node's CUDA_VISIBLE_DEVICES as JSON.

    python gpu_app.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import stat
import sys

from pyspark import cloudpickle

from tfrecord_io import cluster, spark

import cluster_programs

cloudpickle.register_pickle_by_value(cluster_programs)


def main(out: str) -> None:
    script = os.path.join(out, "discover-gpus.sh")
    with open(script, "w") as f:
        f.write('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["0", "1"]}\'\n')
    os.chmod(script, stat.S_IRWXU)
    session = spark.session(
        "local-cluster[1,2,1024]",
        app_name="tfrecord-io-cluster-gpus",
        **{
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.executor.memory": "1g",
            "spark.worker.resource.gpu.amount": "2",
            "spark.worker.resource.gpu.discoveryScript": script,
            "spark.executor.resource.gpu.amount": "2",
            "spark.executor.resource.gpu.discoveryScript": script,
            "spark.task.resource.gpu.amount": "1",
        },
    )
    try:
        with cluster.run(session.sparkContext, cluster_programs.record, {"out": out},
                         num_workers=2) as c:
            c.wait(timeout=300)
    finally:
        session.stop()
    nodes = {}
    for index in (0, 1):
        with open(os.path.join(out, f"worker-{index}.json")) as f:
            nodes[f"worker:{index}"] = json.load(f)["cuda"]
    print("GPUS=" + json.dumps(nodes), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
