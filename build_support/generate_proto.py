"""Regenerate example_pb2.py from example.proto (a maintainer's tool; not used at run time).

Use protoc 3.21.x, whose generated code works with protobuf runtimes 4.21 through 7.x. Newer
protoc releases write a runtime version check that rejects older runtimes. grpcio-tools 1.51.3
bundles protoc 3.21.6; install it in a throwaway virtualenv (it pins protobuf < 5):

    python3 -m venv /tmp/protoc-venv
    /tmp/protoc-venv/bin/pip install grpcio-tools==1.51.3
    /tmp/protoc-venv/bin/python build_support/generate_proto.py
"""

from __future__ import annotations

import pathlib
import sys


def main() -> int:
    from grpc_tools import protoc  # type: ignore[import-not-found]  # noqa: PLC0415 - optional

    root = pathlib.Path(__file__).resolve().parents[1]
    args = ["protoc", "--version"]
    protoc.main(args)
    return protoc.main(
        ["protoc", f"-I{root}", f"--python_out={root}", "tfrecord_io/proto/example.proto"]
    )


if __name__ == "__main__":
    sys.exit(main())
