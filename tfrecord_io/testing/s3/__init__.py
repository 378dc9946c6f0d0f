"""A real S3-compatible server on loopback for tests: moto's standalone server.

:class:`S3Server` (in :mod:`~tfrecord_io.testing.s3.server`) runs ``python -m moto.server`` as a
child process on 127.0.0.1 at a free port, **with authentication on**: once it answers, it
creates one IAM user with a policy allowing everything, and from then on every request must be
signed (AWS Signature Version 4) with that user's access key, so a wrong key or secret is
refused as AWS refuses it (``InvalidAccessKeyId``, ``SignatureDoesNotMatch``). It speaks the S3
REST protocol that tfrecord-io's clients use: SigV4, multipart upload, ranged ``GET``, listing
with delimiters and continuation tokens (1,000 keys a page), ``CopyObject``. Everything lives in
the server's memory; stopping it ends its process group and removes its directory (its log).

Which server, and why: MinIO was the first choice (the reference S3-compatible store, a single
Go binary), but the MinIO server is licensed under the GNU AGPL v3, and the package policy this
project follows excludes AGPL Go modules, so it was not built. moto is Apache-2.0, comes from PyPI
through the project's own ``test`` extra (``moto[s3]`` with ``flask`` and ``flask-cors``, the pieces
of ``moto[server]`` that S3 needs: the full ``server`` extra adds CloudFormation linting, Docker and
X-Ray clients), so ``make setup`` on a fresh machine installs it with everything else, in seconds,
and its server starts in about a second. Its limits, as a test double of S3: the data is in memory
(keep test objects small), and it is one Python process (no throughput figures from it).

Given ``first_byte_latency`` or ``connection_rate``, it answers as a store across a network does
(:mod:`~tfrecord_io.testing.s3.distant`): each answer after that latency, each body at that
rate per connection. Benchmarks use it (``bench/s3.py --first-byte-ms``); the tests' server
answers at once.

By hand, for developers (``make s3``)::

    python -m tfrecord_io.testing.s3        # prints the AWS_* settings to export; Ctrl-C stops it

Example::

    with S3Server() as server:
        server.create_bucket("data")
        os.environ.update(server.environment())   # AWS_ENDPOINT_URL_S3, keys, region
        fs.ls("s3://data/")
"""

from tfrecord_io.errors import S3ServerError
from tfrecord_io.testing.s3.server import REGION, RecordedRequest, S3Server

__all__ = ["REGION", "RecordedRequest", "S3Server", "S3ServerError"]
