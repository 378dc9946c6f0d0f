"""A real Azure Blob Storage server on loopback for tests: Azurite's blob service.

:class:`AzuriteServer` (in :mod:`~tfrecord_io.testing.azurite.server`) runs ``azurite-blob`` as a
child process on 127.0.0.1 at a free port, serving Azurite's well-known development account
(``devstoreaccount1`` and its published key, :data:`ACCOUNT_NAME`, :data:`ACCOUNT_KEY`) at
``http://127.0.0.1:PORT/devstoreaccount1``, with authentication: every request must be signed
with that key (Shared Key) or carry a SAS, and a wrong key is refused as Azure refuses it (HTTP
403, ``AuthorizationFailure``). It speaks the Blob service's REST API that Azure's SDKs use
(pyarrow's ``AzureFileSystem`` among them): containers, block blobs (staged blocks and their
commit, so large uploads), ranged ``GET``, listings with and without a delimiter, server-side
copy, deletes. Its data is in the server's memory (``--inMemoryPersistence``); stopping it ends
its process group and removes its directory (its log).

Which server, and why: Azurite is Microsoft's own emulator of Azure Storage (MIT), the one
Azure's SDKs are tested against and the one pyarrow's Azure tests use; it comes from npm
(``make setup`` installs the version the Makefile pins, ``AZURITE_VERSION``, into
``.tools/azurite``: no global install, no Docker). Only its blob service runs here. Its limits,
as a test double of Azure: the account has a flat namespace; there is no Data Lake Storage
Gen2 (``dfs``) endpoint, so no hierarchical namespace, no atomic directory rename, no ACLs
(pyarrow's ``AzureFileSystem.move`` is not implemented for such accounts); no Entra ID
(OAuth) sign-in without HTTPS; the data is in memory (keep test blobs small); it is one Node.js
process, which takes a few seconds to start (loading its modules).

Clients find it through :meth:`AzuriteServer.environment`: ``AZURE_STORAGE_ACCOUNT_NAME``,
``AZURE_STORAGE_ACCOUNT_KEY`` and ``AZURE_STORAGE_BLOB_ENDPOINT`` (``http://127.0.0.1:PORT``:
scheme and authority; the account is the first segment of each path, Azurite's path-style URLs),
or :attr:`~AzuriteServer.connection_string`.

By hand, for developers (``make azurite``)::

    python -m tfrecord_io.testing.azurite   # prints the AZURE_STORAGE_* settings; Ctrl-C stops it

Example::

    with AzuriteServer() as server:
        server.create_container("data")            # az://data
        os.environ.update(server.environment())
        server.list_blobs("data")                  # name -> size, without tfrecord-io
"""

from tfrecord_io.errors import AzuriteError
from tfrecord_io.testing.azurite.server import (
    ACCOUNT_KEY,
    ACCOUNT_NAME,
    AZURITE_ENV,
    AzuriteServer,
    find_azurite,
)

__all__ = ["ACCOUNT_KEY", "ACCOUNT_NAME", "AZURITE_ENV", "AzuriteError", "AzuriteServer",
           "find_azurite"]
