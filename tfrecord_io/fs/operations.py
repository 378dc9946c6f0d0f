"""The operations of :mod:`tfrecord_io.fs`, written once for every protocol on top of each
file system's ``open``/``stat``/``ls``: open, stat, exists, isdir, ls, glob, walk, makedirs,
delete, rename, replace, atomic_write and staging_directory."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fnmatch
import io
import logging
import os
import posixpath
import stat as stat_module
import uuid
from collections.abc import Iterator, Sequence
from typing import IO, Any, Union

from tfrecord_io.fs.backend import FileInfo, FileSystem
from tfrecord_io.fs.registry import filesystem
from tfrecord_io.fs.urls import GLOB_CHARS, expand_braces, is_local, join, split, split_root

__all__ = [
    "atomic_write",
    "delete",
    "exists",
    "glob",
    "is_hidden",
    "isdir",
    "ls",
    "makedirs",
    "open",
    "publish",
    "rename",
    "replace",
    "staging_directory",
    "stat",
    "walk",
    "walk_directory",
]

log = logging.getLogger(__name__)

PathOrUrl = Union[str, "os.PathLike[str]"]
_MODES = {"rb": "rb", "wb": "wb", "r": "rb", "rt": "rb", "w": "wb", "wt": "wb"}


def is_hidden(name: str) -> bool:
    """Whether a file or directory named *name* is no data, as Hadoop's ``FileInputFormat`` and
    Spark's file index have it: a name starting with ``_`` or ``.`` (``_SUCCESS``,
    ``_temporary``, indexes, ``.crc`` files), or a file that ``hadoop fs -put`` or ``-cp`` is
    still copying (``NAME._COPYING_``, renamed to ``NAME`` once whole)."""
    return name.startswith(("_", ".")) or name.endswith("._COPYING_")


def _child(base: str, name: str) -> str:
    """*base* extended by one name, keeping *base*'s spelling ("" is the current directory)."""
    if not base:
        return name
    return base + name if base.endswith("/") else f"{base}/{name}"


def _basename(url: str) -> str:
    return posixpath.basename(url.rstrip("/"))


def open(  # noqa: A001 - mirrors builtins.open
    url: PathOrUrl, mode: str = "rb", *, encoding: str | None = None, **options: Any
) -> IO[Any]:
    """Opens a path or URL as a file object (a context manager).

    Args:
        url: a local path, ``file://``, ``hdfs://``, ``webhdfs://``, ``http://``, ``https://``
            or ``s3://`` URL (or any registered scheme).
        mode: ``"rb"`` or ``"wb"``; ``"r"``/``"w"`` give text (UTF-8 unless *encoding*). HDFS
            creates missing parent directories when writing; local files do not; ``s3://`` has
            none to create, and its writes appear only when the file is closed (an exception
            in the file's ``with`` block uploads nothing).
        options: passed to the file system: ``offset=`` for HDFS, ``timeout=`` (seconds) for
            HTTP, ``buffering=`` for local files, ``buffer_size=`` (bytes per ranged read) for
            ``s3://``.

    Raises:
        FileNotFoundError, PermissionError: the file is missing or access is denied (the
            ``HdfsError``/``HttpError`` subclasses for remote files).
        UnsupportedOperationError: the protocol cannot do it (e.g. write to https://).
        UnsupportedURLError: no file system for the URL's scheme.
        ValueError: an unknown mode.
    """
    binary_mode = _MODES.get(mode)
    if binary_mode is None:
        raise ValueError(f"unsupported mode {mode!r}: use 'rb', 'wb', 'r' or 'w'")
    fs, target = filesystem(url)
    f = fs.open(target, binary_mode, **options)
    if binary_mode == mode:
        return f
    return _TextFile(f, encoding=encoding or "utf-8")  # type: ignore[arg-type]


class _TextFile(io.TextIOWrapper):
    """Text over a binary file whose writes can be abandoned (an object store's): an exception
    in the ``with`` block abandons them, and so does dropping the file without closing it, as
    for the binary file itself."""

    def __del__(self) -> None:
        try:
            abort = None if self.closed else getattr(self.buffer, "abort", None)
        except ValueError:  # detached
            return
        if abort is not None:
            abort()  # never closed: nothing is flushed or uploaded
            return
        super().__del__()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        abort = getattr(self.buffer, "abort", None)
        if exc_type is not None and abort is not None:
            abort()  # the wrapper is closed with it: nothing is flushed or uploaded
            return
        super().__exit__(exc_type, exc, tb)


def stat(url: PathOrUrl) -> FileInfo:
    """The :class:`FileInfo` of a file or directory (local symbolic links followed).

    Raises:
        FileNotFoundError: it does not exist.
    """
    fs, target = filesystem(url)
    return fs.stat(target)


def exists(url: PathOrUrl) -> bool:
    """Whether a file or directory exists (errors other than "missing" still raise)."""
    try:
        stat(url)
    except FileNotFoundError:
        return False
    return True


def isdir(url: PathOrUrl) -> bool:
    """Whether *url* is an existing directory."""
    try:
        return stat(url).is_dir
    except FileNotFoundError:
        return False


def _entries(fs: FileSystem, base: str) -> list[FileInfo]:
    """The entries of directory *base*, sorted by name, their URLs spelled from *base*."""
    found = [dataclasses.replace(e, url=_child(base, _basename(e.url))) for e in fs.ls(base)]
    found.sort(key=lambda e: e.url)
    return found


def ls(url: PathOrUrl, *, detail: bool = False) -> list[Any]:
    """The entries of a directory sorted by name (for a file: the file alone), as URLs in the
    form given (local paths for a ``file:`` URL, as from :func:`glob`), or as
    :class:`FileInfo` with ``detail=True``.

    Raises:
        FileNotFoundError: it does not exist.
        UnsupportedOperationError: the protocol has no directories (http, https).
    """
    fs, target = filesystem(url)
    if not fs.can_list:
        return fs.ls(target)  # raises UnsupportedOperationError, naming the protocol
    info = fs.stat(target)
    entries = _entries(fs, target) if info.is_dir else [info]
    return entries if detail else [e.url for e in entries]


def glob(pattern: PathOrUrl, *, detail: bool = False, skip_hidden: bool = False) -> list[Any]:
    """The paths or URLs matching *pattern*, sorted.

    ``*``, ``?`` and ``[...]`` (:mod:`fnmatch`, case-sensitive) may appear in any path
    component after the URL's authority; ``**`` is the same as ``*`` (no recursion). A pattern
    without wildcards gives ``[pattern]`` if it exists, else ``[]``; a missing directory
    matches nothing. With ``skip_hidden`` a wildcard does not match hidden names
    (:func:`is_hidden`) unless the pattern's component is hidden too (as :func:`expand` does).

    As in Hadoop's globs, ``{a,b}`` matches either alternative (nested too) and ``[^...]`` is
    ``[!...]``. A pattern that matches nothing but names an existing file or directory as it is
    (``data[1].tfrecord``) gives that.

    Raises:
        UnsupportedOperationError: the protocol cannot list (http, https).
    """
    alternatives = expand_braces(os.fspath(pattern))
    if len(alternatives) > 1:
        found: dict[str, Any] = {}
        for alternative in alternatives:
            for m in _glob(alternative, skip_hidden):
                found.setdefault(m.url, m)
        matches = sorted(found.values(), key=lambda m: m.url)
    else:
        matches = _glob(pattern, skip_hidden)
    if not matches:  # a name that holds glob characters, taken as it is
        fs, target = filesystem(pattern)
        if GLOB_CHARS.intersection(split_root(target)[1]) or len(alternatives) > 1:
            try:
                matches = [fs.stat(target)]
            except (FileNotFoundError, NotADirectoryError):
                matches = []
    return matches if detail else [m.url for m in matches]


def _glob(pattern: PathOrUrl, skip_hidden: bool) -> list[FileInfo]:
    """:func:`glob`'s matches of a pattern without braces, as :class:`FileInfo` sorted."""
    fs, target = filesystem(pattern)
    root, path = split_root(target)
    parts = [p for p in path.split("/") if p]
    first = next((i for i, p in enumerate(parts) if GLOB_CHARS.intersection(p)), None)
    if first is None:
        try:
            found = [fs.stat(target)]
        except FileNotFoundError:
            found = []
        if path.endswith("/"):
            found = [f for f in found if f.is_dir]  # as for a pattern: "x/" is a directory
        return found
    if not fs.can_list:
        return fs.ls(target)  # raises UnsupportedOperationError, naming the protocol
    absolute = path.startswith("/")
    base0 = root + ("/" if absolute else "") + "/".join(parts[:first])
    if base0:
        try:
            if not fs.stat(base0).is_dir:
                return []
        except (FileNotFoundError, NotADirectoryError):
            return []
    bases = [base0]
    matches: list[FileInfo] = []
    for i in range(first, len(parts)):
        component, last = parts[i].replace("[^", "[!"), i == len(parts) - 1
        allow_hidden = not skip_hidden or is_hidden(component)
        matches = []
        for base in bases:
            if GLOB_CHARS.intersection(component):
                try:
                    entries = _entries(fs, base)
                except (FileNotFoundError, NotADirectoryError):
                    continue  # deleted meanwhile
                matches.extend(
                    e
                    for e in entries
                    if fnmatch.fnmatchcase(_basename(e.url), component)
                    and (allow_hidden or not is_hidden(_basename(e.url)))
                    and (last or e.is_dir)
                )
            else:
                candidate = _child(base, component)
                try:
                    info = fs.stat(candidate)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                if last or info.is_dir:
                    matches.append(dataclasses.replace(info, url=candidate))
        bases = list(dict.fromkeys(m.url for m in matches))  # a key both file and directory
        if not bases:
            break
    if path.endswith("/"):
        matches = [m for m in matches if m.is_dir]
    return sorted(_one_per_url(matches), key=lambda m: m.url)


def _one_per_url(matches: list[FileInfo]) -> list[FileInfo]:
    """*matches* with one entry per URL: on an object store a key may be both an object and
    a directory (``x`` beside ``x/y``), listed as both; the object is kept (its data is what a
    reader of the URL reads), so that the URL is not read twice."""
    unique: dict[str, FileInfo] = {}
    for m in matches:
        kept = unique.get(m.url)
        if kept is None or (kept.is_dir and not m.is_dir):
            unique[m.url] = m
    return list(unique.values())


def walk(url: PathOrUrl, *, detail: bool = False) -> Iterator[tuple[str, list[Any], list[Any]]]:
    """Walks a directory tree top-down, like :func:`os.walk`: ``(directory, dirs, files)`` for
    each directory, with names (or :class:`FileInfo` with ``detail=True``) sorted. Removing
    entries from ``dirs`` prunes the walk. Local symbolic links to directories are followed;
    a link back to a directory being walked (a loop) is skipped with a warning. A file or a
    missing path yields nothing.
    """
    fs, target = filesystem(url)
    try:
        info = fs.stat(target)
    except FileNotFoundError:
        return
    if info.is_dir:
        yield from walk_directory(url, detail=detail)


def walk_directory(
    url: PathOrUrl, *, detail: bool = False
) -> Iterator[tuple[str, list[Any], list[Any]]]:
    """:func:`walk` of *url* that the caller already found to be a directory (a ``stat`` said
    so): the same walk, without asking again (on an object store, a ``HEAD`` and a ``LIST``)."""
    fs, target = filesystem(url)
    yield from _walk(fs, target, detail, frozenset([fs.realpath(target)]))


def _walk(
    fs: FileSystem, directory: str, detail: bool, ancestors: frozenset[str]
) -> Iterator[tuple[str, list[Any], list[Any]]]:
    entries = _entries(fs, directory)
    dirs = [e for e in entries if e.is_dir]
    files = [e for e in entries if not e.is_dir]
    by_name = {_basename(d.url): d for d in dirs}
    shown_dirs: list[Any] = dirs if detail else list(by_name)
    shown_files: list[Any] = files if detail else [_basename(f.url) for f in files]
    yield directory, shown_dirs, shown_files
    for d in shown_dirs:
        sub = d if detail else by_name.get(d)
        if sub is None:
            continue
        real = fs.realpath(sub.url)
        if real in ancestors:
            log.warning("Not following %s: it links back to %s, a loop", sub.url, real)
            continue
        yield from _walk(fs, sub.url, detail, ancestors | {real})


def makedirs(url: PathOrUrl) -> None:
    """Creates a directory and its missing parents; fine if it exists as a directory.

    Raises:
        FileExistsError: a file is in the way.
    """
    fs, target = filesystem(url)
    fs.makedirs(target)


def delete(url: PathOrUrl, *, recursive: bool = False) -> None:
    """Deletes a file or a directory (a non-empty one only with ``recursive``). A local
    symbolic link is removed, not what it points to.

    Raises:
        FileNotFoundError: it does not exist.
    """
    fs, target = filesystem(url)
    fs.delete(target, recursive)


def _same_filesystem(src: PathOrUrl, dst: PathOrUrl) -> tuple[FileSystem, str, str]:
    fs, s = filesystem(src)
    fs_dst, d = filesystem(dst)
    if fs is not fs_dst:
        raise ValueError(f"cannot rename across file systems: {s} -> {d}")
    return fs, s, d


def rename(src: PathOrUrl, dst: PathOrUrl) -> None:
    """Renames (moves) *src* to *dst* on the same file system.

    Raises:
        FileNotFoundError: *src*, or *dst*'s parent directory, is missing.
        FileExistsError: *dst* exists (everywhere: local renames do not replace either; use
            :func:`replace` for that).
    """
    fs, s, d = _same_filesystem(src, dst)
    fs.rename(s, d)


def replace(src: PathOrUrl, dst: PathOrUrl) -> None:
    """Renames *src* to *dst*, replacing a file at *dst*: atomically on local disks, on
    ``hdfs://`` and ``webhdfs://`` (one NameNode call) and (for a file) on ``s3://``, by a
    server-side copy."""
    fs, s, d = _same_filesystem(src, dst)
    fs.replace(s, d)


@contextlib.contextmanager
def atomic_write(url: PathOrUrl) -> Iterator[IO[bytes]]:
    """A binary writer whose data appears at *url* only when the ``with`` block ends without
    an exception: it goes to a hidden sibling (``.NAME.<unique>.tmp``, skipped by readers of
    the directory) that then :func:`replace`\\ s *url*. On an exception the sibling is deleted
    and *url* is left as it was. On a file system whose writes are atomic already (object
    stores: ``s3://``) it writes *url* itself, and an exception uploads nothing. A local
    symbolic link keeps pointing where it did: the file it points to is replaced. A local
    device or FIFO (``/dev/null``) is written in place.
    """
    fs, given = filesystem(url)
    target = fs.atomic_write_target(given)
    if target is None:
        with fs.open(given, "wb") as f:
            yield f
        return
    root, path = split_root(target)
    directory, name = posixpath.split(path)
    temp = root + posixpath.join(directory, f".{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        stream = fs.open(temp, "wb")
    except FileNotFoundError as e:  # name what the caller asked for, not the sibling
        raise FileNotFoundError(
            errno.ENOENT, "No such directory to write the file in", os.fspath(url)
        ) from e
    try:
        with stream as f:
            yield f
        if is_local(target):  # a replaced file keeps its permissions
            with contextlib.suppress(FileNotFoundError):
                os.chmod(temp, stat_module.S_IMODE(os.stat(target).st_mode))
        fs.replace(temp, target)
    except BaseException:
        _remove_leftover(temp)
        raise


@contextlib.contextmanager
def staging_directory(parent: PathOrUrl, label: str) -> Iterator[str]:
    """A hidden directory in *parent* to build output in before it is renamed into place, as
    a conversion of several files does: the directory analogue of :func:`atomic_write`.

    *parent* is made if missing. The ``with`` block gets the staging directory,
    ``PARENT/.tfrecord-io-LABEL-<unique>.tmp`` (hidden, so readers of *parent* skip it). On
    exit it is deleted with whatever is left in it; if the block raised, the directories made
    here for *parent* (it and the missing ones above it) are deleted too, as far as they are
    empty. A deletion that fails is logged as a warning that names what is left to remove by
    hand; it never replaces the block's own outcome.
    """
    made = _missing_chain(parent)
    makedirs(parent)
    staging = join(parent, f".tfrecord-io-{label}-{uuid.uuid4().hex[:12]}.tmp")
    try:
        makedirs(staging)
        yield staging
    except BaseException:
        _remove_leftover(staging, recursive=True)
        for directory in made:  # the deepest first
            if not _is_empty(directory):
                break
            _remove_leftover(directory)
        raise
    _remove_leftover(staging, recursive=True)


def publish(staging: PathOrUrl, names: Sequence[str], *, replacing: Sequence[str] = ()) -> None:
    """Move the entries *names* of *staging* (a :func:`staging_directory`) into its parent,
    replacing what the parent holds under those names and under *replacing* (the outputs of an
    earlier run that this one does not write): all of them or none.

    What is replaced is first moved aside, into a hidden directory of the parent, deleted at
    the end. When a move fails (a full disk, a lost connection, an interrupt), the entries
    already moved in are removed and those moved aside are moved back, so the parent holds
    what it held before, then the error is raised; what cannot be moved back stays in the
    hidden directory, and a warning names it. On object stores every move is a copy, those
    aside included.
    """
    parent = split(os.fspath(staging).rstrip("/"))[0]
    earlier = [name for name in dict.fromkeys([*names, *replacing])
               if exists(join(parent, name))]
    aside = join(parent, f".tfrecord-io-replaced-{uuid.uuid4().hex[:12]}.tmp")
    if earlier:
        makedirs(aside)
    moved_aside: list[str] = []
    moved_in: list[str] = []
    try:
        for name in earlier:
            log.info("%s %s", "Replacing" if name in names else "Removing", join(parent, name))
            rename(join(parent, name), join(aside, name))
            moved_aside.append(name)
        for name in names:
            rename(join(staging, name), join(parent, name))
            moved_in.append(name)
    except BaseException:
        for name in moved_in:
            _remove_leftover(join(parent, name), recursive=True)
        restored = True
        for name in moved_aside:
            try:
                rename(join(aside, name), join(parent, name))
            except Exception as e:  # noqa: BLE001 - reported, and the caller's error stands
                restored = False
                log.warning("Could not move %s back to %s (%s: %s); it is in %s: move it back "
                            "by hand", name, parent, type(e).__name__, e, aside)
        if earlier and restored:
            _remove_leftover(aside, recursive=True)
        raise
    if earlier:
        _remove_leftover(aside, recursive=True)


def _missing_chain(directory: PathOrUrl) -> list[str]:
    """*directory* and its ancestors up to the first that exists, the deepest first: those
    that do not exist (empty if *directory* does)."""
    missing: list[str] = []
    current = os.fspath(directory).rstrip("/")
    while current and not exists(current):
        missing.append(current)
        parent = split(current)[0].rstrip("/")
        if parent == current or not split_root(parent)[1].strip("/"):
            break
        current = parent
    return missing


def _is_empty(directory: PathOrUrl) -> bool:
    try:
        return not ls(directory)
    except OSError:
        return False


def _remove_leftover(url: PathOrUrl, *, recursive: bool = False) -> None:
    """Deletes a temporary file or directory, logging (not raising) a failure to: the caller
    is already finishing with a result or an error of its own."""
    try:
        delete(url, recursive=recursive)
    except FileNotFoundError:
        pass
    except Exception as e:  # noqa: BLE001 - reported, and the caller's outcome stands
        log.warning("Could not remove %s (%s: %s); remove it by hand", os.fspath(url),
                    type(e).__name__, e)
