"""Small image trees for the command-line tests on object stores, and the check that a
``--spark`` conversion writes what the local one writes."""

from __future__ import annotations

import io
from pathlib import Path

from tfrecord_io import cli, fs


def png(value: int) -> bytes:
    """A 4x3 grey PNG of *value*."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (4, 3), value).save(buf, "PNG")
    return buf.getvalue()


def spark_conversion_matches_local(tmp_path: Path, out: str, spark_master: str) -> None:
    """Converts a two-class tree of 8 PNGs locally and with ``--spark`` to *out*, then asserts
    that *out* holds the same files with the same bytes (``_SUCCESS`` by name only: S3A's magic
    committer records its commit in it)."""
    for label, name in enumerate(("cat", "dog")):
        (tmp_path / "tree" / name).mkdir(parents=True)
        for i in range(4):
            (tmp_path / "tree" / name / f"{i}.png").write_bytes(png(40 * label + i))
    argv = ["--shards", "2", "--validation-fraction", "0.25"]
    local = tmp_path / "local"
    assert cli.main(["images", str(tmp_path / "tree"), str(local), *argv]) == 0
    # In-process, main() uses the running session (conftest's local cluster), configuring the
    # store's connector in it from this process's settings, and leaves it up.
    assert cli.main(["images", str(tmp_path / "tree"), out, *argv, "--spark", spark_master]) == 0
    files = sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file())
    written = sorted(f"{directory}/{name}"[len(out) + 1:]
                     for directory, _, names in fs.walk(out) for name in names)
    assert written == files
    for name in files:
        if name.endswith("_SUCCESS"):
            continue
        with fs.open(f"{out}/{name}") as f:
            assert f.read() == (local / name).read_bytes(), name
