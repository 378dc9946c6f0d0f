"""Importing tfrecord_io.fs (and records, which uses it) loads no HDFS or HTTP client, nor the
fs.hdfs backend: file systems are imported on first use of their scheme."""

from __future__ import annotations

import json
import subprocess
import sys


def test_file_systems_are_imported_on_first_use(tmp_path):
    code = (
        "import json, sys\n"
        "import tfrecord_io.fs, tfrecord_io.records, tfrecord_io.index\n"
        f"tfrecord_io.fs.expand({str(tmp_path)!r}, allow_empty=True)\n"
        "heavy = ['hdfs_native', 'hdfs', 'requests', 'tfrecord_io.fs.hdfs', 'tfrecord_io.fs.http',"
        " 'urllib.request', 'tensorflow', 'pyspark']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
