import json
import feed_programs
from tfrecord_io import cluster


def test_smoke(sc, tmp_path):
    rdd = sc.parallelize([b"r%d" % i for i in range(1001)], 5).cache()
    c = cluster.run(sc, feed_programs.read_epochs, {"out": str(tmp_path), "epochs": 2},
                    num_workers=2, input_mode="spark")
    with c:
        report = c.train(rdd, num_epochs=2)
        print(report)
        c.wait(timeout=300)
    for f in tmp_path.glob("*.json"):
        info = json.loads(f.read_text())
        print(f.name, [len(e) for e in info["epochs"]["train"]], info["after_end"])
