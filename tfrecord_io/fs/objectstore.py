"""What every object store of :mod:`tfrecord_io.fs` shares: the operations on a store that has
no directories, written once over a :class:`pyarrow.fs.FileSystem` client
(:class:`ObjectStoreFileSystem`), with the reader and the atomic writer of its objects.

Each store is a subclass that says how to reach it (its configuration and clients) and how its
SDK words failures: ``s3://`` (:mod:`~tfrecord_io.fs.s3`), ``az://`` and ``abfs[s]://``
(:mod:`~tfrecord_io.fs.azure`), ``gs://`` (:mod:`~tfrecord_io.fs.gcs`).

Semantics, the same on every store:

* A URL is ``SCHEME://BUCKET/KEY`` (a container, for Azure): the key is taken literally, without
  leading or trailing ``/`` (keys are not percent-encoded in these URLs). A key with an empty path
  part (``data//x``, or a leading ``/``) cannot be reached through pyarrow's clients: a URL naming
  one is refused with an :class:`~tfrecord_io.errors.ObjectStoreError` saying so, and listings
  leave such keys out (with a warning, once for each directory that holds them).
* A "directory" is a key prefix: ``.../data`` is a directory when a key starts with ``data/``
  (or the marker object ``data/`` exists, which :meth:`~ObjectStoreFileSystem.makedirs` writes,
  as Hadoop's connectors and pyarrow do). An object ``data`` beside keys ``data/...`` is both a
  file and a directory, and listed as both. Listing is by prefix and delimiter, page after page.
* Reads are ranged ``GET`` requests of :data:`READ_BUFFER` bytes, fetched ahead of the reader by
  background threads (:class:`~tfrecord_io.fs.readahead.ReadAhead`), :func:`read_requests` of
  them in flight at once (4 by default), so that parsing, the round trips and the transfers
  overlap; a seek elsewhere starts fetching there.
* **Writes are atomic**: ``open(url, "wb")`` stages the data in a local temporary file (in
  ``TMPDIR``) and uploads it when the file is closed (in blocks or parts for large files, which
  the store makes visible only when the upload completes). Until then nothing is at the URL; a
  writer closed by an exception (``with`` block), abandoned without ``close``, or whose writes
  failed uploads nothing, so no half-written object is ever visible.
  :func:`tfrecord_io.fs.atomic_write` therefore writes in place.
* ``replace`` of a file is a server-side copy (atomic for readers of the destination) and a
  delete; ``rename`` refuses an existing destination; renaming a directory copies each object,
  then deletes the source (not atomic; a copy that fails deletes what was copied, so the
  destination does not exist and the source is whole). Buckets and containers are never
  created or deleted.

Errors (:mod:`tfrecord_io.errors`, each naming the URL): a missing object
:class:`~tfrecord_io.errors.ObjectStoreFileNotFoundError` (a ``FileNotFoundError``); a bucket or
container that does not exist :class:`~tfrecord_io.errors.BucketNotFoundError`; wrong
credentials or no permission :class:`~tfrecord_io.errors.ObjectStorePermissionError` (a
``PermissionError``); an unreachable or silent store after its retries, or a connection lost
mid-read, or a key with an empty path part, :class:`~tfrecord_io.errors.ObjectStoreError`. All of
them are ``OSError`` subclasses.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import tempfile
import threading
import weakref
from collections.abc import Iterator
from typing import Any, BinaryIO, Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from tfrecord_io.errors import (
    BucketNotFoundError,
    FileChangedError,
    ObjectStoreError,
    ObjectStoreFileExistsError,
    ObjectStoreFileNotFoundError,
    ObjectStorePermissionError,
    TFRecordError,
    UnsupportedURLError,
)
from tfrecord_io.fs.backend import FileInfo, FileSystem, PositionedReader
from tfrecord_io.fs.readahead import ReadAhead
from tfrecord_io.fs.urls import redact

__all__ = ["READ_BUFFER", "READ_REQUESTS", "READ_REQUESTS_ENV", "ObjectStoreFileSystem",
           "StoreSettings", "read_requests"]

log = logging.getLogger(__name__)

#: Bytes fetched by one ranged GET when reading (a block of the read-ahead).
READ_BUFFER = 8 << 20
#: The setting of how many ranged GETs of one object a reader keeps in flight at once (1 to
#: 16; default :data:`READ_REQUESTS`), read when a file is opened.
READ_REQUESTS_ENV = "TFRECORD_IO_READ_REQUESTS"
#: Ranged GETs of one object in flight at once when reading, by default: a store across the
#: network serves each request after a round trip and each connection at a bounded rate, so
#: parallel requests multiply what one reader gets.
READ_REQUESTS = 4
_MAX_READ_REQUESTS = 16
# The buffer above the read-ahead, for small reads (a record's header) without a lock each.
_SMALL_READS = 256 << 10


def read_requests() -> int:
    """How many ranged GETs of one object a reader keeps in flight: :data:`READ_REQUESTS_ENV`
    when set (``ValueError`` unless a whole number from 1 to 16), else :data:`READ_REQUESTS`."""
    text = os.environ.get(READ_REQUESTS_ENV, "").strip()
    if not text:
        return READ_REQUESTS
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= _MAX_READ_REQUESTS:
        raise ValueError(f"{READ_REQUESTS_ENV}={text!r}: use a whole number from 1 to "
                         f"{_MAX_READ_REQUESTS} (1 for a store on this machine, which shares its "
                         "cores with the reader)")
    return value


class StoreSettings(Protocol):
    """What the operations need to know of a store's resolved configuration, for messages."""

    def where(self) -> str:
        """The store, as a person would name it (an endpoint, or the service and region)."""

    def limits(self) -> str:
        """How long and how often a request is tried, as the message of an unanswered one
        says it (``"3 attempt(s), 10 s to connect"``)."""


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(w in text for w in words)


def _has_empty_part(key: str) -> bool:
    """Whether *key* has an empty path part (``a//b``, a leading ``/``), which pyarrow's clients
    refuse as a path and list as the directory above it."""
    return key.startswith("/") or "//" in key


#: What to do about a key with an empty path part, for messages.
_EMPTY_PART_ADVICE = ("pyarrow's clients, and so tfrecord-io, cannot name such a key: copy it to "
                      "a key without the empty part with the store's own tools (the AWS CLI, "
                      "azcopy, gcloud)")


def _empty_part_error(url: str, what: str) -> ObjectStoreError:
    """The error for *url*, whose key has an empty path part that pyarrow refuses."""
    return ObjectStoreError(errno.EINVAL, f"cannot {what} {url}: its key has an empty path part "
                            f"(a '//' or a leading '/'); {_EMPTY_PART_ADVICE}")


class ObjectStoreFileSystem(FileSystem):
    """The operations of :mod:`tfrecord_io.fs` on an object store reached through a pyarrow
    client; see the module's docstring. A subclass gives the store's clients
    (:meth:`_connect`) and the words of its SDK's errors (the ``_*_words`` attributes)."""

    atomic_writes = True
    reads_ahead = True
    #: What the store calls the first part of a URL's path.
    bucket_word = "bucket"
    # Words of the SDK's messages (as pyarrow passes them on) that say what went wrong.
    _no_bucket_words: tuple[str, ...] = ()
    _denied_words: tuple[str, ...] = ()
    _unreachable_words: tuple[str, ...] = ()
    # What to check when access is denied (credentials, permissions), for the message.
    _denied_hint = "wrong or missing credentials, or no permission"

    def __init__(self) -> None:
        self._buckets_seen: set[tuple[Any, str]] = set()
        self._seen_lock = threading.Lock()
        # The directories whose keys with an empty path part were reported (once each).
        self._empty_parts_reported: set[str] = set()

    # -- what a store provides ----------------------------------------------------------------

    def _connect(self, url: str) -> tuple[pafs.FileSystem, Any]:
        """``(client, settings)`` for *url*: the pyarrow client that reaches its bucket, and the
        configuration it was made with (a hashable :class:`StoreSettings`)."""
        raise NotImplementedError

    def _locate(self, url: str) -> tuple[str, str]:
        """``(bucket, key)`` of ``SCHEME://BUCKET/KEY``: the key without leading or trailing
        ``/``."""
        rest = url.split("://", 1)[1]
        bucket, _, key = rest.partition("/")
        if not bucket:
            scheme = url.split("://", 1)[0]
            raise UnsupportedURLError(
                f"{url!r} names no {self.bucket_word}: use {scheme}://{self.bucket_word.upper()}"
                "/KEY")
        return bucket, key.strip("/")

    def _arrow_path(self, url: str) -> str:
        """The path of *url* in its client: ``BUCKET/KEY``, or ``BUCKET``."""
        bucket, key = self._locate(url)
        return f"{bucket}/{key}" if key else bucket

    # -- errors -------------------------------------------------------------------------------

    def _error(self, e: OSError | pa.ArrowInvalid, url: str, what: str,
               config: StoreSettings) -> OSError:
        """The error of :mod:`tfrecord_io.errors` for a failed pyarrow call on *url*: an
        ``OSError`` of the store, or pyarrow's ``ArrowInvalid`` (a ``ValueError``) for a path it
        refuses before asking the store."""
        if isinstance(e, TFRecordError):
            return e
        text = redact(str(e))  # the SDK's text may hold the request's URL, and a SAS token
        if not isinstance(e, OSError):
            if "empty path component" in text.lower():
                return _empty_part_error(url, what)
            return ObjectStoreError(errno.EINVAL, f"cannot {what} {url}: pyarrow's client "
                                    f"refuses its path ({text})")
        if _has(text, self._no_bucket_words):
            bucket = self._locate(url)[0]
            return BucketNotFoundError(
                f"cannot {what} {url}: the {self.bucket_word} {bucket!r} does not exist at "
                f"{config.where()}"
            )
        if _has(text, self._denied_words):
            return ObjectStorePermissionError(
                f"access denied to {url} at {config.where()} ({self._denied_hint}): {text}"
            )
        if isinstance(e, FileNotFoundError):
            return ObjectStoreFileNotFoundError(f"no such object: {url}")
        if _has(text, self._unreachable_words):
            return ObjectStoreError(
                f"cannot {what} {url}: the object store at {config.where()} did not answer "
                f"(after {config.limits()}): {text}"
            )
        return ObjectStoreError(f"cannot {what} {url}: {text}")

    @contextlib.contextmanager
    def _translated(self, url: str, what: str, config: StoreSettings) -> Iterator[None]:
        try:
            yield
        except (OSError, pa.ArrowInvalid) as e:
            raise self._error(e, url, what, config) from None

    def _call(self, url: str, what: str, fn: Any) -> Any:
        client, config = self._connect(url)
        with self._translated(url, what, config):
            return fn(client)

    def _missing(self, url: str) -> OSError:
        """What a missing *url* means: no such object, or no such bucket (asked once)."""
        self._check_bucket(url)
        return ObjectStoreFileNotFoundError(f"no such object or directory: {url}")

    def _check_bucket(self, url: str) -> None:
        """:class:`BucketNotFoundError` unless the bucket of *url* exists (a positive answer is
        remembered for the process)."""
        bucket, _ = self._locate(url)
        client, config = self._connect(url)
        with self._seen_lock:
            if (config, bucket) in self._buckets_seen:
                return
        with self._translated(url, "reach", config):
            found = client.get_file_info(bucket).type != pafs.FileType.NotFound
        if not found:
            raise BucketNotFoundError(
                f"the {self.bucket_word} {bucket!r} of {url} does not exist at {config.where()}"
            )
        with self._seen_lock:
            self._buckets_seen.add((config, bucket))

    def _arrow_info(self, url: str) -> pafs.FileInfo:
        path = self._arrow_path(url)
        return self._call(url, "stat", lambda c: c.get_file_info(path))

    @staticmethod
    def _info(url: str, info: pafs.FileInfo) -> FileInfo:
        is_dir = info.type == pafs.FileType.Directory
        mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
        return FileInfo(url, 0 if is_dir else int(info.size or 0), is_dir, mtime)

    # -- the operations -----------------------------------------------------------------------

    def open(self, target: str, mode: str, *, buffer_size: int = READ_BUFFER) -> BinaryIO:  # type: ignore[override]
        bucket, key = self._locate(target)
        if not key:
            raise IsADirectoryError(f"{target} is a {self.bucket_word}, not an object")
        if mode == "rb":
            if buffer_size <= 0:
                raise ValueError(f"buffer_size must be positive, not {buffer_size} ({target})")
            fetchers = read_requests()  # a wrong setting fails before a request is made
            client, config = self._connect(target)
            try:
                handle = client.open_input_file(self._arrow_path(target))
            except FileNotFoundError:
                if self._arrow_info(target).type == pafs.FileType.Directory:
                    raise IsADirectoryError(f"{target} is a directory, not an object: open "
                                            "a file in it") from None
                raise self._missing(target) from None
            except (OSError, pa.ArrowInvalid) as e:
                raise self._error(e, target, "open", config) from None
            size = int(handle.size())
            raw = _Reader(handle, size, target, self, config)
            ahead = ReadAhead(raw, size, block_size=buffer_size, fetchers=fetchers, name=target)
            return io.BufferedReader(ahead, min(buffer_size, _SMALL_READS))  # type: ignore[return-value]
        if mode == "wb":
            if _has_empty_part(key):  # refused now, not after the data is staged
                raise _empty_part_error(target, "write")
            self._check_bucket(target)  # a wrong bucket fails now, not after the data is staged
            if self._arrow_info(target).type == pafs.FileType.Directory:
                # An object at a directory's own key would hide the directory from listings.
                raise IsADirectoryError(f"cannot write {target}: it is a directory")
            return _Writer(self, target)  # type: ignore[return-value]
        raise ValueError(f"unsupported mode {mode!r} for {target}")

    def stat(self, target: str) -> FileInfo:
        info = self._arrow_info(target)
        if info.type == pafs.FileType.NotFound:
            if not self._locate(target)[1]:
                self._check_bucket(target)
            raise self._missing(target)
        return self._info(target, info)

    def _children(self, client: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
        """What the directory *path* holds (a listing by prefix and delimiter); raises
        ``FileNotFoundError`` or ``NotADirectoryError``."""
        return list(client.get_file_info(pafs.FileSelector(path, recursive=False)))

    def ls(self, target: str) -> list[FileInfo]:
        """The entries of the directory *target*. Keys below an empty path part (``dir//x``,
        or ``/x`` at the top of a bucket) are left out: pyarrow lists their common prefix as
        the directory itself, and no URL can name them (a warning says so, once for each
        directory)."""
        return self._listing(target)[0]

    def _listing(self, target: str) -> tuple[list[FileInfo], bool]:
        """:meth:`ls` of *target*, and whether keys below an empty path part were left
        out."""
        client, config = self._connect(target)
        path = self._arrow_path(target)
        try:
            found = self._children(client, path)
        except FileNotFoundError:
            raise self._missing(target) from None
        except NotADirectoryError:
            raise NotADirectoryError(f"not a directory: {target}") from None
        except (OSError, pa.ArrowInvalid) as e:
            raise self._error(e, target, "list", config) from None
        base = target.rstrip("/")
        entries = [info for info in found
                   if info.base_name and info.path.rstrip("/") != path]
        left_out = len(entries) < len(found)
        if left_out:
            self._report_empty_parts(base)
        return [self._info(f"{base}/{info.base_name}", info) for info in entries], left_out

    def _report_empty_parts(self, directory: str) -> None:
        """Warns, once for *directory*, that its listing leaves out keys below an empty path
        part."""
        with self._seen_lock:
            if directory in self._empty_parts_reported:
                return
            self._empty_parts_reported.add(directory)
        log.warning("%s holds keys below an empty path part (%s//NAME), which are left out "
                    "of its listing: %s", directory, directory, _EMPTY_PART_ADVICE)

    def makedirs(self, target: str) -> None:
        if not self._locate(target)[1]:
            self._check_bucket(target)
            return
        info = self._arrow_info(target)
        if info.type == pafs.FileType.File:
            raise ObjectStoreFileExistsError(f"cannot create the directory {target}: an object "
                                             "is there")
        if info.type == pafs.FileType.Directory:
            return
        self._check_bucket(target)
        path = self._arrow_path(target)
        self._call(target, "create the directory", lambda c: c.create_dir(path, recursive=True))

    def delete(self, target: str, recursive: bool) -> None:
        if not self._locate(target)[1]:
            raise self._unsupported(f"delete the {self.bucket_word}", target)
        info = self._arrow_info(target)
        path = self._arrow_path(target)
        if info.type == pafs.FileType.NotFound:
            raise self._missing(target)
        if info.type == pafs.FileType.File:
            self._call(target, "delete", lambda c: c.delete_file(path))
            return
        if not recursive:
            entries, left_out = self._listing(target)
            if entries or left_out:  # the keys left out would be deleted with it
                raise ObjectStoreError(errno.ENOTEMPTY, f"directory not empty: {target}")
        self._delete_dir(target, path)

    def _delete_dir(self, target: str, path: str) -> None:
        """Deletes the directory *target* (at *path* in pyarrow's terms) and all it holds."""
        try:
            self._call(target, "delete", lambda c: c.delete_dir(path))
        except FileNotFoundError:
            # pyarrow's GCS client deletes the objects, then the directory's marker object,
            # which a directory made by writing objects into it never had.
            if self._arrow_info(target).type != pafs.FileType.NotFound:
                raise

    def _copy_object(self, src: str, dst: str) -> None:
        if not self._locate(dst)[1]:
            raise IsADirectoryError(f"{dst} is a {self.bucket_word}, not an object")
        source, destination = self._arrow_path(src), self._arrow_path(dst)
        self._call(src, "copy", lambda c: c.copy_file(source, destination))

    def _check_copy(self, src: str, dst: str) -> None:
        """Refuses a move that server-side copies cannot do, before anything moves: one client
        reaches both URLs (one account, one region or endpoint)."""
        if self._connect(src)[0] is not self._connect(dst)[0]:
            raise ObjectStoreError(
                errno.EXDEV, f"cannot move {src} to {dst}: they are in different accounts or "
                "regions, and a move copies on the server (copy the data, then delete it)")

    def rename(self, src: str, dst: str) -> None:
        """Moves *src* to *dst*, which must not exist: a file by a server-side copy and a
        delete; a directory object by object, then the source is deleted (not atomic: when a
        copy fails, what was copied is deleted, and *dst* is left as it was, missing). A
        directory cannot move into itself."""
        self._check_copy(src, dst)
        source = self._arrow_info(src)
        if source.type == pafs.FileType.NotFound:
            raise self._missing(src)
        if self._arrow_info(dst).type != pafs.FileType.NotFound:
            raise ObjectStoreFileExistsError(f"rename destination exists: {dst}")
        if source.type == pafs.FileType.Directory and \
                (self._arrow_path(dst) + "/").startswith(self._arrow_path(src) + "/"):
            # Its delete would take the copies with it.
            raise ObjectStoreError(errno.EINVAL, f"cannot move the directory {src} into "
                                   f"itself ({dst})")
        if source.type == pafs.FileType.File:
            self._copy_object(src, dst)
            self.delete(src, recursive=False)
            return
        base = self._arrow_path(src)
        entries = self._call(src, "list", lambda c: c.get_file_info(
            pafs.FileSelector(base, recursive=True)))
        s, d = src.rstrip("/"), dst.rstrip("/")
        for entry in entries:
            if _has_empty_part(entry.path[len(base) + 1:].rstrip("/")):
                # It could be neither copied nor left behind (the source's delete takes it).
                raise ObjectStoreError(
                    errno.EINVAL, f"cannot move the directory {src}: it holds a key with an "
                    f"empty path part ({s}{entry.path[len(base):]}); nothing was moved. "
                    f"{_EMPTY_PART_ADVICE}")
        self.makedirs(dst)
        try:
            for entry in entries:
                relative = entry.path[len(base) + 1:].rstrip("/")
                if not relative:
                    continue  # the directory itself (its marker), made above
                if entry.type == pafs.FileType.Directory:
                    self.makedirs(f"{d}/{relative}")
                else:
                    self._copy_object(f"{s}/{relative}", f"{d}/{relative}")
        except BaseException:
            # A part of the tree at its destination would pass for all of it, and a retry
            # would be refused (the destination exists): the copies made are removed.
            self._remove_partial_copy(src, dst)
            raise
        self.delete(src, recursive=True)

    def _remove_partial_copy(self, src: str, dst: str) -> None:
        """Deletes *dst*, what a failed move of the directory *src* copied there (it did not
        exist before); a failure to is logged, naming what to delete by hand."""
        try:
            self.delete(dst, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as e:  # noqa: BLE001 - reported; the move's own error is raised
            log.warning("The move of %s to %s failed, and the part copied to %s could not be "
                        "deleted (%s: %s): delete it by hand; %s is whole", src, dst, dst,
                        type(e).__name__, e, src)

    def replace(self, src: str, dst: str) -> None:
        """Moves the file *src* to *dst*, replacing a file there: the copy replaces *dst* at
        once for its readers (stores write whole objects), then *src* is deleted."""
        self._check_copy(src, dst)
        target = self._arrow_info(dst)
        if target.type == pafs.FileType.File and self._arrow_path(src) == self._arrow_path(dst):
            return  # the same object however spelled (one client, checked above): it stays
        if target.type == pafs.FileType.Directory:
            raise ObjectStoreFileExistsError(f"cannot replace the directory {dst} by {src}")
        source = self._arrow_info(src)
        if source.type == pafs.FileType.NotFound:
            raise self._missing(src)
        if source.type == pafs.FileType.Directory:
            if target.type != pafs.FileType.NotFound:
                raise ObjectStoreFileExistsError(f"cannot replace {dst} by the directory {src}")
            self.rename(src, dst)
            return
        self._copy_object(src, dst)
        self.delete(src, recursive=False)

    # -- used by the file objects ------------------------------------------------------------

    def _upload(self, staged: str, url: str) -> None:
        """Uploads the local file *staged* to *url*: one write of the whole file, memory-mapped,
        into pyarrow's output stream (a multipart or block upload for large files, completed
        only when every part is in), then its close. One call into C++: nothing can stop it
        half-way and then complete the upload (pyarrow's streams complete when dropped; a failed
        part makes that completion fail, so nothing appears)."""
        client, config = self._connect(url)
        size = os.path.getsize(staged)
        path = self._arrow_path(url)
        with self._translated(url, "write", config):
            # compression=None: pyarrow would gzip the bytes again for a name ending in .gz.
            if not size:
                client.open_output_stream(path, compression=None).close()
                return
            # Mapped before the stream opens: nothing that can fail comes between its opening
            # and the one write (a stream dropped unwritten would publish an empty object).
            with pa.memory_map(staged) as source:
                data = source.read_buffer()
                # The stream uploads from the mapped pages themselves, in the background: they
                # must stay mapped until it is closed.
                out = client.open_output_stream(path, compression=None)
                out.write(data)
                out.close()


def _version(handle: Any) -> bytes | None:
    """What tells one version of an object from another, from the answer that opened *handle*:
    GCS's generation, else the ETag (S3, Azure), else the time it was last modified."""
    metadata = handle.metadata()
    if metadata is None:
        return None
    for key in ("generation", "ETag", "etag", "Last-Modified"):
        if key in metadata:
            return bytes(metadata[key])
    return None


class _Reader(PositionedReader):
    """Ranged reads of one object (under a :class:`ReadAhead` and a :class:`io.BufferedReader`
    by ``open``).

    The requests are not pinned to the version of the object that was opened: an object
    replaced while it is read would give some blocks of each version. So when a read that took
    more than one request reaches the object's end, the object's version (its ETag, or GCS's
    generation) is asked for once more and compared with the one opened: another version is a
    :class:`~tfrecord_io.errors.FileChangedError` (GCS's reads are pinned: its old version is
    then gone, which is the same error)."""

    _size: int

    def __init__(self, handle: Any, size: int, url: str, owner: ObjectStoreFileSystem,
                 config: StoreSettings) -> None:
        super().__init__(url, size)
        self._handle = handle
        self._owner = owner
        self._config = config
        self._version = _version(handle)
        self._requests = 0
        self._lock = threading.Lock()

    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        view = memoryview(buffer).cast("B")
        n = min(len(view), self._size - self._pos)
        if n <= 0:
            return 0
        try:
            self._handle.seek(self._pos)
            got = int(self._handle.readinto(view[:n]))
        except OSError as e:
            raise self._read_error(e, self._pos) from None
        self._check_version(self._pos, got)
        self._pos += got
        return got

    def read_at(self, offset: int, length: int) -> Any:
        """*length* bytes (fewer at the end) from *offset*, as one ranged ``GET``; safe to call
        from several threads at once (the reader's position does not move)."""
        try:
            data = self._handle.read_at(length, offset)
        except OSError as e:
            raise self._read_error(e, offset) from None
        self._check_version(offset, len(memoryview(data).cast("B")))
        return data

    def _read_error(self, e: OSError, offset: int) -> OSError:
        if isinstance(e, FileNotFoundError):  # deleted, or (GCS) the version opened replaced
            return FileChangedError(f"{self.name} was deleted or replaced while being read, "
                                    f"at byte {offset}: read it again once its writer is done")
        return self._owner._error(e, self.name, f"read byte {offset} of", self._config)  # noqa: SLF001 - its own file system

    def _check_version(self, offset: int, got: int) -> None:
        """Counts a request; at the object's end, after more than one, compares its version
        with the one opened."""
        with self._lock:
            self._requests += 1
            if offset + got < self._size or self._requests < 2 or self._version is None:
                return
        try:
            client, _ = self._owner._connect(self.name)  # noqa: SLF001 - its own file system
            now = _version(client.open_input_file(self._owner._arrow_path(self.name)))  # noqa: SLF001 - its own file system
        except FileNotFoundError:
            now = None
        except OSError as e:
            raise self._read_error(e, offset) from None
        if now != self._version:
            raise FileChangedError(
                f"{self.name} was replaced while being read (its version differs at its end, "
                f"byte {offset + got}): what was read may mix both versions; read it again "
                "once its writer is done")

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                self._handle.close()
        super().close()


# The writers of this process, whose staged bytes are flushed before a fork: a child's copy
# of a file buffer would otherwise write them again when it is dropped.
_WRITERS: weakref.WeakSet[_Writer] = weakref.WeakSet()


def _flush_writers_before_fork() -> None:
    for writer in list(_WRITERS):
        with contextlib.suppress(Exception):
            writer.flush()


os.register_at_fork(before=_flush_writers_before_fork)


class _Writer(io.BufferedIOBase):
    """Stages the data in a local temporary file; :meth:`close` uploads it (the object appears
    then, whole), :meth:`abort` discards it (nothing appears). A forked child's copy never
    uploads, removes or writes to what its parent staged."""

    def __init__(self, owner: ObjectStoreFileSystem, url: str) -> None:
        super().__init__()
        self.name = url
        self._owner = owner
        self._staged = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by close/abort
            prefix="tfrecord-io-upload-", suffix=".upload", delete=False
        )
        self._failed: BaseException | None = None
        self._finished = False
        self._pid = os.getpid()  # a forked child's copy never uploads or removes its data
        _WRITERS.add(self)

    def _owned(self) -> bool:
        """Whether this process opened the writer (not a forked child's copy of it)."""
        return os.getpid() == self._pid

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.closed:
            raise ValueError(f"write to a closed file ({self.name})")
        try:
            return int(self._staged.write(data))
        except BaseException as e:
            self._failed = e
            raise

    def tell(self) -> int:
        return int(self._staged.tell())

    def flush(self) -> None:
        """Nothing to send yet: the data is uploaded when the file is closed."""
        if not self._staged.closed:
            self._staged.flush()

    def _discard(self) -> None:
        self._finished = True
        with contextlib.suppress(OSError):
            self._staged.close()
        with contextlib.suppress(OSError):
            os.remove(self._staged.name)

    def abort(self) -> None:
        """Closes without uploading: nothing appears at the URL (an object already there stays
        as it was)."""
        if not self._finished and self._owned():
            self._discard()
        super().close()

    def close(self) -> None:
        """Uploads the staged data; the object appears now, whole.

        Raises:
            ObjectStoreError: the upload failed (nothing appears); or a write had failed, and
                nothing is uploaded.
        """
        if self._finished:
            super().close()
            return
        if not self._owned():
            super().close()
            raise ObjectStoreError(
                f"not uploading {self.name}: it was opened by process {self._pid}, which this "
                "one was forked from; that process uploads it")
        try:
            if self._failed is not None:
                raise ObjectStoreError(
                    f"not uploading {self.name}: a write to it failed ({self._failed!r})"
                )
            self._staged.close()
            self._owner._upload(self._staged.name, self.name)  # noqa: SLF001 - its own file system
        finally:
            self._discard()
            super().close()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # Never closed: abandoned, as after an error. Uploading here would publish data that
        # its writer may not have finished.
        if not self._finished and self._owned():
            log.warning("%s was never closed: nothing is uploaded", self.name)
            self._discard()
