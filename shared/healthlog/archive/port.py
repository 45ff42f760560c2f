"""The Archive port: bodies in, bodies out, never overwritten, never half-visible."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol


class ArchiveWriter(Protocol):
    """A body being written. Nothing is visible under the key until ``commit``."""

    def write(self, chunk: bytes) -> None:
        """Append a chunk. Raises ArchiveUnavailable."""

    def commit(self) -> int:
        """Make the body visible under its key, whole, and durable; return its size.

        Raises AlreadyExists if the key exists (an id is never overwritten) and
        ArchiveUnavailable if the store fails; after either, nothing was published.
        """

    def abort(self) -> None:
        """Drop what was written; never raises."""


class Archive(Protocol):
    def writer(self, key: str) -> ArchiveWriter:
        """Start writing a body under ``key``."""

    def put(self, key: str, body: bytes) -> int:
        """Write a whole body at once (writer + write + commit)."""

    def read(self, key: str) -> bytes:
        """The body's bytes. Raises BodyMissing or ArchiveUnavailable."""

    def local_file(self, key: str) -> AbstractContextManager[Path]:
        """A file on this machine holding the body, for a reader that seeks (a zip).

        For as long as the block runs. The local folder gives the committed file itself
        (read it, never change it); S3 streams the object into a private temporary file,
        removed when the block ends, so memory does not grow with the body. Raises
        BodyMissing or ArchiveUnavailable (also when the local copy finds no room).
        """

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every committed key under ``prefix``, in key order."""

    def size(self, key: str) -> int:
        """The committed body's size in bytes. Raises BodyMissing or ArchiveUnavailable."""

    def sweep(self, older_than_s: float) -> int:
        """Remove what interrupted writes left behind, older than ``older_than_s``.

        A writer killed before ``commit`` or ``abort`` leaves a temporary file (local)
        or an open multipart upload (S3); committed bodies are never touched. Returns
        how many leftovers were removed.
        """

    def delete(self, key: str) -> None:
        """Remove the committed body under ``key``, durably; a missing key is no error.

        Only retention deletes (``healthlog retention``, only bodies the journal has
        already marked removed), so running it again after a crash finishes the work.
        Raises ArchiveUnavailable if the store fails.
        """

    def close(self) -> None:
        """Release connections."""


def put_whole(archive: Archive, key: str, body: bytes) -> int:
    """``Archive.put`` for every adapter: writer, one write, commit; abort if it failed."""
    w = archive.writer(key)
    committed = False
    try:
        w.write(body)
        size = w.commit()
        committed = True
        return size
    finally:
        if not committed:
            w.abort()
