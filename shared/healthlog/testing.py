"""Fakes of the ports, shipped with the package so every test uses the same ones.

``MemoryArchive`` passes the same contract suite as the real adapters
(``tests/contract/test_archive_contract.py``), so it cannot drift from them.
``FaultyArchive`` wraps any Archive and fails or stalls on demand, for the tests of
what ingest and the fold do when the store misbehaves; ``FaultyJournal`` does the same
for any Journal.

Nothing here imports boto3, moto or a database driver: this module ships with the
package (and so in the Lambda layer). The S3 helpers for tests, which need moto and
boto3, are in ``tests/s3.py``.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from healthlog.archive.keys import check_key
from healthlog.archive.port import Archive, ArchiveWriter, put_whole
from healthlog.errors import (
    AlreadyExists,
    ArchiveUnavailable,
    BodyMissing,
    HealthlogError,
    JournalBusy,
)
from healthlog.journal.port import Journal


class MemoryArchive:
    """An Archive in a dict; thread-safe, like the stores it stands in for."""

    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.closed = False

    def writer(self, key: str) -> MemoryWriter:
        return MemoryWriter(self, check_key(key))

    def put(self, key: str, body: bytes) -> int:
        return put_whole(self, key, body)

    def read(self, key: str) -> bytes:
        check_key(key)
        with self._lock:
            try:
                return self._bodies[key]
            except KeyError:
                raise BodyMissing() from None

    def size(self, key: str) -> int:
        return len(self.read(key))

    @contextlib.contextmanager
    def local_file(self, key: str) -> Iterator[Path]:
        body = self.read(key)
        with tempfile.TemporaryDirectory(prefix="healthlog-body-") as folder:
            path = Path(folder) / "body"
            path.write_bytes(body)
            yield path

    def keys(self, prefix: str = "") -> Iterator[str]:
        with self._lock:
            snapshot = sorted(k for k in self._bodies if k.startswith(prefix))
        yield from snapshot

    def sweep(self, older_than_s: float) -> int:
        return 0  # an abandoned writer holds its bytes in itself: nothing is left behind

    def delete(self, key: str) -> None:
        with self._lock:
            self._bodies.pop(key, None)

    def close(self) -> None:
        self.closed = True

    def _publish(self, key: str, body: bytes) -> None:
        with self._lock:
            if key in self._bodies:
                raise AlreadyExists()
            self._bodies[key] = body


class MemoryWriter:
    def __init__(self, archive: MemoryArchive, key: str) -> None:
        self._archive = archive
        self._key = key
        self._chunks: list[bytes] = []
        self._closed = False

    def write(self, chunk: bytes) -> None:
        self._check_open()
        self._chunks.append(bytes(chunk))

    def commit(self) -> int:
        self._check_open()
        body = b"".join(self._chunks)
        try:
            self._archive._publish(self._key, body)
        finally:
            self.abort()
        return len(body)

    def abort(self) -> None:
        self._closed = True
        self._chunks = []

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this archive writer was already committed or aborted")


class FaultyArchive:
    """Another Archive that raises ArchiveUnavailable, or stalls, when told to.

    The switches are plain attributes, so a test can flip them between steps:
    ``fail_write`` (every ``write``), ``fail_commit`` (``commit``: nothing is
    published), ``fail_read`` (``read``, ``size``, ``local_file`` and ``keys``),
    ``fail_read_for`` (``read``, ``size`` and ``local_file`` of the keys containing one
    of these strings: a delivery id is enough), and ``delay_s``, a stall before every
    operation (through ``sleep``, which a test may replace).
    ``calls`` counts the operations that reached the wrapper, by name.
    """

    # a misspelt switch (``archive.fail_reads = True``) raises instead of doing nothing
    __slots__ = (
        "_sleep",
        "calls",
        "delay_s",
        "fail_commit",
        "fail_read",
        "fail_read_for",
        "fail_write",
        "inner",
    )

    def __init__(
        self,
        inner: Archive,
        *,
        fail_write: bool = False,
        fail_commit: bool = False,
        fail_read: bool = False,
        fail_read_for: Iterable[str] = (),
        delay_s: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.inner = inner
        self.fail_write = fail_write
        self.fail_commit = fail_commit
        self.fail_read = fail_read
        self.fail_read_for = set(fail_read_for)
        self.delay_s = delay_s
        self.calls: Counter[str] = Counter()
        self._sleep = sleep

    def writer(self, key: str) -> FaultyWriter:
        self._enter("writer")
        return FaultyWriter(self, self.inner.writer(key))

    def put(self, key: str, body: bytes) -> int:
        # aborts only on failure, so that ``calls["abort"]`` counts real aborts
        return put_whole(self, key, body)

    def read(self, key: str) -> bytes:
        self._enter("read", fail=self._fails_read(key))
        return self.inner.read(key)

    def size(self, key: str) -> int:
        self._enter("size", fail=self._fails_read(key))
        return self.inner.size(key)

    def local_file(self, key: str) -> AbstractContextManager[Path]:
        self._enter("local_file", fail=self._fails_read(key))
        return self.inner.local_file(key)

    def keys(self, prefix: str = "") -> Iterator[str]:
        self._enter("keys", fail=self.fail_read)
        return self.inner.keys(prefix)

    def sweep(self, older_than_s: float) -> int:
        self._enter("sweep")
        return self.inner.sweep(older_than_s)

    def delete(self, key: str) -> None:
        self._enter("delete", fail=self.fail_write)
        self.inner.delete(key)

    def close(self) -> None:
        self.calls["close"] += 1
        self.inner.close()

    def _fails_read(self, key: str) -> bool:
        return self.fail_read or any(part in key for part in self.fail_read_for)

    def _enter(self, operation: str, *, fail: bool = False) -> None:
        self.calls[operation] += 1
        if self.delay_s > 0:
            self._sleep(self.delay_s)
        if fail:
            raise ArchiveUnavailable(f"injected fault: {operation}")


class FaultyWriter:
    def __init__(self, archive: FaultyArchive, inner: ArchiveWriter) -> None:
        self._archive = archive
        self._inner = inner

    def write(self, chunk: bytes) -> None:
        self._archive._enter("write", fail=self._archive.fail_write)
        self._inner.write(chunk)

    def commit(self) -> int:
        try:
            self._archive._enter("commit", fail=self._archive.fail_commit)
        except ArchiveUnavailable:
            self._inner.abort()  # the contract: after a failed commit nothing is published
            raise
        return self._inner.commit()

    def abort(self) -> None:
        self._archive.calls["abort"] += 1
        self._inner.abort()


class FaultyJournal:
    """Another Journal that raises a journal error from chosen methods, when told to.

    ``journal.fail("write_outcome")`` makes every later ``write_outcome`` raise
    ``JournalBusy`` (as the adapter does once its retries are spent) before it reaches
    the real journal, so nothing is written; ``error=JournalUnavailable`` (or any
    ``HealthlogError`` class) picks another error, ``times=n`` fails only the next
    ``n`` calls. ``heal()`` ends every fault, ``heal(name)`` one. ``calls`` counts the
    calls of each method that reached the wrapper, failed or not.

    Every method of the wrapped journal is reached through the wrapper, with its own
    signature, so the wrapper follows the port as it grows.
    """

    def __init__(self, inner: Journal) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        # method -> (error class, calls left to fail; None: until healed)
        self._faults: dict[str, tuple[type[HealthlogError], int | None]] = {}
        self._lock = threading.Lock()

    def fail(
        self, method: str, error: type[HealthlogError] = JournalBusy, *, times: int | None = None
    ) -> None:
        if method.startswith("_") or not callable(getattr(self.inner, method, None)):
            raise ValueError(f"the journal has no method {method!r}")
        with self._lock:
            self._faults[method] = (error, times)

    def heal(self, method: str | None = None) -> None:
        with self._lock:
            if method is None:
                self._faults.clear()
            else:
                self._faults.pop(method, None)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy, an unpickle): no recursion
            raise AttributeError(name)
        attr = getattr(self.inner, name)
        if name.startswith("_") or not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            self._enter(name)
            return attr(*args, **kwargs)

        return call

    def _enter(self, method: str) -> None:
        with self._lock:
            self.calls[method] += 1
            fault = self._faults.get(method)
            if fault is None:
                return
            error, left = fault
            if left is not None:
                if left <= 1:
                    del self._faults[method]
                else:
                    self._faults[method] = (error, left - 1)
        raise error(f"injected fault: {method}")


def _journal_conforms(journal: FaultyJournal) -> Journal:
    """mypy checks here that the wrapper can stand for a Journal."""
    return journal
