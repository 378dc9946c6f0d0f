"""A real Google Cloud Storage server on loopback for tests: fake-gcs-server.

:class:`GcsServer` (in :mod:`~tfrecord_io.testing.gcs.server`) runs ``fake-gcs-server`` as a
child process on 127.0.0.1 at a free port, over plain HTTP, at ``http://127.0.0.1:PORT``. It
speaks the JSON API of Cloud Storage that Google's client libraries use (pyarrow's
``GcsFileSystem`` among them): buckets, simple, multipart and resumable uploads (the URLs it
hands out for resumable uploads point back at it: ``-external-url``), ranged downloads, listings
with prefixes, delimiters and page tokens, rewrite (server-side copy), compose, deletes. Its
data is in the server's memory (``-backend memory``); stopping it ends its process group and
removes its directory (its log: a line per request).

Which server, and why: Google publishes no Cloud Storage emulator (``gcloud``'s emulators
cover other services); fake-gcs-server (BSD-2-Clause) is a widely used one, a single Go program
that starts in a fraction of a second. ``make setup`` builds the version the Makefile pins
(``FAKE_GCS_SERVER_VERSION``) with ``go install`` into ``.tools/bin``. Its limits, as a test
double of GCS: no authentication (it accepts any request, with or without credentials, so a
wrong key cannot be tested) and no IAM; its memory backend holds everything in one process
(keep test objects small); the XML (S3-compatible) API only in part. Some answers differ
from GCS: a ``GET`` of an object with an empty name (``/storage/v1/b/BUCKET/o/``) answers the
bucket's listing, not 404, so pyarrow's ``delete_dir`` and ``delete_dir_contents`` of a whole
bucket fail against it.

Clients find it through :meth:`GcsServer.environment`: ``STORAGE_EMULATOR_HOST``
(``http://127.0.0.1:PORT``), the variable Google's client libraries honour; pyarrow takes the
endpoint as ``GcsFileSystem(anonymous=True, scheme="http", endpoint_override="127.0.0.1:PORT")``
(:meth:`~GcsServer.filesystem`).

By hand, for developers (``make gcs``)::

    python -m tfrecord_io.testing.gcs       # prints STORAGE_EMULATOR_HOST to export; Ctrl-C stops

Example::

    with GcsServer() as server:
        server.create_bucket("data")               # gs://data
        os.environ.update(server.environment())
        server.list_objects("data")                # name -> size, without tfrecord-io
"""

from tfrecord_io.errors import GcsServerError
from tfrecord_io.testing.gcs.server import (
    FAKE_GCS_SERVER_ENV,
    PROJECT,
    GcsServer,
    find_fake_gcs_server,
)

__all__ = ["FAKE_GCS_SERVER_ENV", "PROJECT", "GcsServer", "GcsServerError",
           "find_fake_gcs_server"]
