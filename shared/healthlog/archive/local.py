"""The Archive in a local folder: the embedded default.

A body is streamed to a temporary file in ``<root>/.tmp/`` (the same filesystem as its
destination), fsynced, then published under ``<root>/<key>`` with ``os.link``: the link
is atomic and fails if the key exists, so a body is never half-visible and never
overwritten, even by another process. (``os.rename`` would silently replace an
existing key; an O_EXCL placeholder followed by a rename would briefly show an empty
body under the key.) The directories whose entries changed are fsynced before
``commit`` returns, so a committed body survives a power cut.

A crash leaves at most a file in ``.tmp/``, which is never reported as a key.

The root is marked: a file ``.healthlog-archive`` written when the archive creates its
root. A root folder without it is not this archive (an unmounted volume's bare mount
point, a wrong path): unavailable, so ingest answers 503 and the fold leaves deliveries
pending, instead of writing bodies where the volume will hide them or failing every
delivery as ``missing_body``. A root that holds bodies but no marker (an archive from
before the marker) is adopted: the marker is written beside them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from healthlog.archive.keys import check_key
from healthlog.archive.port import put_whole
from healthlog.errors import AlreadyExists, ArchiveUnavailable, BodyMissing
from healthlog.files import private_dirs

TMP_DIR = ".tmp"
#: the file that says a folder is the root of an archive (docs/operations.md)
MARKER = ".healthlog-archive"
_MARKER_TEXT = b"healthlog archive root: bodies live under this folder; do not remove\n"


class LocalArchive:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def writer(self, key: str) -> LocalWriter:
        """Start writing a body under ``key``; no I/O happens until the first write."""
        return LocalWriter(self, self._path(key))

    def put(self, key: str, body: bytes) -> int:
        return put_whole(self, key, body)

    def read(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as e:
            raise self._missing(e) from e
        except OSError as e:
            raise ArchiveUnavailable(f"archive read failed: {e.strerror}") from e

    @contextlib.contextmanager
    def local_file(self, key: str) -> Iterator[Path]:
        """The committed file itself: it is already on this machine."""
        self.size(key)  # BodyMissing (or unavailable) as ``read`` would say
        yield self._path(key)

    def size(self, key: str) -> int:
        path = self._path(key)
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError) as e:
            raise self._missing(e) from e
        except OSError as e:
            raise ArchiveUnavailable(f"archive stat failed: {e.strerror}") from e
        if not stat.S_ISREG(st.st_mode):
            raise BodyMissing()  # a directory: a prefix of keys, not a body
        return st.st_size

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every committed key under ``prefix``, in the same order as S3 lists them."""
        if not self.root.exists():
            return  # nothing was ever written here
        self.check_root()
        yield from self._walk(self.root, "", prefix)

    def check_root(self, *, create: bool = False) -> None:
        """Raise ArchiveUnavailable unless the root is this archive's (marked, or adopted).

        With ``create``, a missing root is made, with its marker: the first write.
        """
        marker = self.root / MARKER
        try:
            if marker.is_file():
                return
            if not self.root.exists():
                if not create:
                    raise ArchiveUnavailable("archive root is missing")
                self._create_root()
                return
            with os.scandir(self.root) as it:
                names = {entry.name for entry in it}
            if MARKER in names:
                return  # another writer made the root between the two looks
            if not names:
                raise ArchiveUnavailable(
                    f"archive root holds no {MARKER} marker and nothing else: is its volume"
                    f" mounted? (a new, empty folder: create the file {MARKER} in it)"
                )
            _write_marker(marker)  # adopted: bodies from before the marker
        except OSError as e:
            raise ArchiveUnavailable(f"archive root check failed: {e.strerror}") from e

    def _create_root(self) -> None:
        """Make the root with its marker already in it, in one step.

        The root appears by a rename of a marked staging folder beside it, so no writer,
        in this process or another, ever sees it without its marker: a root that was
        made and not yet marked would look like an unmounted volume's empty mount point
        to a concurrent first write, which would then refuse its body. A writer that
        loses the race to make the root keeps the winner's and removes its own staging
        folder; a crash leaves at most an empty staging folder beside the root.
        """
        parent = self.root.parent
        created = private_dirs(parent)
        staging = Path(tempfile.mkdtemp(prefix=f"{MARKER}-new-", dir=parent))
        try:
            _write_marker(staging / MARKER)
            os.rename(staging, self.root)
        except OSError as e:
            shutil.rmtree(staging, ignore_errors=True)
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                return  # another writer made the root, with its marker, meanwhile
            raise
        _fsync_dir(parent)
        for folder in created:  # each new parent's own entry
            _fsync_dir(folder.parent)

    def sweep(self, older_than_s: float) -> int:
        """Delete the files in ``.tmp/`` not modified for ``older_than_s`` seconds, and the
        staging folders of a root a crash left beside it (``_create_root``)."""
        cutoff = time.time() - older_than_s
        removed = self._sweep_staging(cutoff)
        try:
            with os.scandir(self.root / TMP_DIR) as it:
                entries = list(it)
        except FileNotFoundError:
            return 0
        except OSError as e:
            raise ArchiveUnavailable(f"archive listing failed: {e.strerror}") from e
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime <= cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue  # its writer committed or aborted meanwhile
            except OSError as e:
                raise ArchiveUnavailable(f"archive sweep failed: {e.strerror}") from e
        return removed

    def _sweep_staging(self, cutoff: float) -> int:
        """Remove ``.healthlog-archive-new-*`` folders beside the root older than ``cutoff``:
        what a writer killed while it made the root left (a marker at most)."""
        removed = 0
        try:
            with os.scandir(self.root.parent) as it:
                staging = [e for e in it if e.name.startswith(f"{MARKER}-new-")]
        except OSError:
            return 0  # no parent folder yet, or not ours to list: nothing we left there
        for entry in staging:
            try:
                if entry.is_dir(follow_symlinks=False) and entry.stat().st_mtime <= cutoff:
                    shutil.rmtree(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue  # another sweep, or its writer, removed it meanwhile
            except OSError as e:
                raise ArchiveUnavailable(f"archive sweep failed: {e.strerror}") from e
        return removed

    def delete(self, key: str) -> None:
        """Unlink the body, then fsync its folder so the removal survives a power cut."""
        path = self._path(key)
        self.check_root()  # an unmounted volume is unavailable, not "already deleted"
        try:
            os.unlink(path)
        except FileNotFoundError:
            return  # deleted before (a run that crashed before it said so): done
        except OSError as e:
            raise ArchiveUnavailable(f"archive delete failed: {e.strerror}") from e
        try:
            _fsync_dir(path.parent)
        except OSError as e:
            raise ArchiveUnavailable(f"archive fsync failed: {e.strerror}") from e

    def close(self) -> None:
        pass

    # --- internals ----------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        check_key(key)
        if key.split("/", 1)[0] == TMP_DIR:
            raise ValueError(f"archive keys may not start with {TMP_DIR}/")
        if key == MARKER:
            raise ValueError(f"{MARKER} is the archive's marker, not a key")
        return self.root / key

    def _missing(self, e: OSError) -> BodyMissing | ArchiveUnavailable:
        # a root that is not this archive's is an unmounted or misconfigured volume, not
        # a missing body: the fold must leave the delivery pending rather than fail it
        try:
            self.check_root()
        except ArchiveUnavailable as unavailable:
            return unavailable
        return BodyMissing()

    def _walk(self, directory: Path, rel: str, prefix: str) -> Iterator[str]:
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except FileNotFoundError:
            return  # removed while we walked (retention): nothing left to list
        except OSError as e:
            raise ArchiveUnavailable(f"archive listing failed: {e.strerror}") from e
        # S3 lists keys in byte order of the whole key; sorting a directory's entries
        # by name, with a directory's name followed by "/", gives the same order
        # ("a-b" < "a/x" because "-" < "/", although the directory "a" < "a-b")
        named = []
        for entry in entries:
            if not rel and entry.name in (TMP_DIR, MARKER):
                continue
            if entry.is_dir(follow_symlinks=False):
                named.append((rel + entry.name + "/", entry, True))
            elif entry.is_file(follow_symlinks=False):
                named.append((rel + entry.name, entry, False))
        for name, entry, is_dir in sorted(named, key=lambda n: n[0]):
            if is_dir:
                # descend only where a key under this directory could match the prefix
                if name.startswith(prefix) or prefix.startswith(name):
                    yield from self._walk(Path(entry.path), name, prefix)
            elif name.startswith(prefix):
                yield name


class LocalWriter:
    def __init__(self, archive: LocalArchive, final: Path) -> None:
        self._archive = archive
        self._final = final
        self._file: BinaryIO | None = None
        self._tmp: Path | None = None
        self._size = 0
        self._closed = False

    def write(self, chunk: bytes) -> None:
        f = self._open()
        try:
            f.write(chunk)
        except OSError as e:
            self.abort()
            raise ArchiveUnavailable(f"archive write failed: {e.strerror}") from e
        self._size += len(chunk)

    def commit(self) -> int:
        f = self._open()
        try:
            f.flush()
            os.fsync(f.fileno())
            f.close()
            created = self._make_parents()
        except OSError as e:
            self.abort()
            raise ArchiveUnavailable(f"archive write failed: {e.strerror}") from e
        assert self._tmp is not None
        try:
            os.link(self._tmp, self._final)
        except FileExistsError as e:
            self.abort()
            raise AlreadyExists() from e
        except OSError as e:
            self.abort()
            raise ArchiveUnavailable(f"archive publish failed: {e.strerror}") from e
        try:
            for directory in created:
                _fsync_dir(directory)
        except OSError as e:
            # the body is visible but may not survive a power cut: take it back, so
            # that "not committed" stays true and the caller can answer 503
            with contextlib.suppress(OSError):
                os.unlink(self._final)
            self.abort()
            raise ArchiveUnavailable(f"archive fsync failed: {e.strerror}") from e
        self.abort()  # the temp name is no longer needed; the body lives under its key
        return self._size

    def abort(self) -> None:
        self._closed = True
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._tmp)
            self._tmp = None

    def _open(self) -> BinaryIO:
        if self._closed:
            raise RuntimeError("this archive writer was already committed or aborted")
        if self._file is None:
            tmp_dir = self._archive.root / TMP_DIR
            try:
                self._archive.check_root(create=True)
            except ArchiveUnavailable:
                self._closed = True
                raise
            try:
                # bodies are health data: private whatever the umask
                private_dirs(tmp_dir)
                # mkstemp: O_EXCL, mode 0600, a name no other writer can get
                fd, name = tempfile.mkstemp(dir=tmp_dir, prefix="body-")
            except OSError as e:
                self._closed = True
                raise ArchiveUnavailable(f"archive write failed: {e.strerror}") from e
            self._tmp = Path(name)
            self._file = os.fdopen(fd, "wb")
        return self._file

    def _make_parents(self) -> list[Path]:
        """Create the key's missing directories; return every directory to fsync.

        Each new directory's parent gained an entry, and so does the key's own
        directory once the body is linked into it.
        """
        directory = self._final.parent
        return [created.parent for created in private_dirs(directory)] + [directory]


def _write_marker(marker: Path) -> None:
    """The marker, durable before the first body is: created once, by one writer."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another writer marked it meanwhile
    try:
        os.write(fd, _MARKER_TEXT)
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(marker.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
