"""A reading of an export in a process of its own: the parsing beside the fold's writes.

``read_aside(path, batch_points=..., resume=...)`` gives what ``read_export`` gives (an
``ExportReading``'s ``batches()``, ``xml_size``, ``bytes_read`` and counts, the same
errors), but the reader runs in a child process (a fresh interpreter,
``python -c ... healthlog.applehealth.aside``, that shares nothing of the parent's
threads, connections or locks, and never runs the parent's main module again, as
multiprocessing's *spawn* would) and sends each batch through a pipe as it is read. A
fold in steps then parses batch *k + 1* while its own process writes batch *k*: two
cores at work, where in one process the GIL would take turns. The batches are the
same, in the same order, with the same positions: the child runs ``read_export``.

The pipe holds little, so the child is at most a batch or two ahead and memory stays
flat. A child that dies (killed, out of memory) ends the reading with ``ReaderDied``: to
the fold that is a crash of its own, counted as one. Closing the reading (or any error
in the parent) kills the child; a parent killed outright closes the pipe, and the child
stops at its next write. The child is in the parent's process group: a signal to the
group reaches both.

Only what ``batches()`` gives crosses the pipe: Points as plain tuples (pickled without
their class, made Points again on arrival), Records, positions and counts, names only.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import struct
import subprocess
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from healthlog.applehealth.files import ExportUnreadable
from healthlog.applehealth.read import BATCH_POINTS, Batch, ExportCut, read_export
from healthlog.errors import ReaderDied
from healthlog.model import Point

_new = tuple.__new__
_LENGTH = struct.Struct("<Q")
# the child's first lines: the parent's import path, then this module's ``main``
_BOOT = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "from healthlog.applehealth.aside import main; main(sys.argv[2:])"
)


class AsideReading:
    """The parent's side of a reading in a child process (see the module's doc)."""

    def __init__(self, source: Path, *, batch_points: int, resume: int) -> None:
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _BOOT,
                json.dumps(sys.path),
                str(source),
                str(batch_points),
                str(resume),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdout is not None
        self._receive: IO[bytes] = self._process.stdout
        self.uncovered: Counter[str] = Counter()
        self.unreadable: Counter[str] = Counter()
        self.incomparable = 0
        self.bytes_read = 0
        try:
            kind, *rest = self._next()
            if kind == "unreadable":
                raise ExportUnreadable(rest[0])
            self.xml_size: int = rest[0]
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> AsideReading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self) -> tuple[Any, ...]:
        head = self._receive.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            raise ReaderDied("the export's reader process died")
        (length,) = _LENGTH.unpack(head)
        body = self._receive.read(length)
        if len(body) < length:
            raise ReaderDied("the export's reader process died")
        # our own child's, over a pipe no one else holds: not untrusted data
        message: tuple[Any, ...] = pickle.loads(body)  # noqa: S301
        return message

    def batches(self) -> Iterator[Batch]:
        """As ``ExportReading.batches``; the counts are those of the last batch given."""
        while True:
            kind, *rest = self._next()
            if kind == "batch":
                rows, records, position, bytes_read, uncovered, unreadable, incomparable = rest
                self.uncovered = Counter(uncovered)
                self.unreadable = Counter(unreadable)
                self.incomparable = incomparable
                self.bytes_read = bytes_read
                yield Batch([_new(Point, row) for row in rows], records, position, bytes_read)
            elif kind == "end":
                self.bytes_read = rest[0]
                return
            elif kind == "cut":
                self.bytes_read = rest[1]
                raise ExportCut(rest[0])
            elif kind == "unreadable":
                raise ExportUnreadable(rest[0])
            elif kind == "damaged":
                raise zipfile.BadZipFile("the zip's export.xml is damaged")
            else:  # "failed": the reader raised what it never should
                raise RuntimeError(f"the export's reader failed ({rest[0]})")

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._receive.close()


def read_aside(
    source: str | Path, *, batch_points: int = BATCH_POINTS, resume: int = 0
) -> AsideReading:
    """An ``AsideReading`` of ``source``; raises ``ExportUnreadable`` as ``read_export``."""
    return AsideReading(Path(source), batch_points=batch_points, resume=resume)


def _send(out: IO[bytes], *message: object) -> None:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LENGTH.pack(len(body)))
    out.write(body)
    out.flush()


def _child(source: str, batch_points: int, resume: int, out: IO[bytes]) -> None:
    """The child: ``read_export`` and every batch down the pipe (plain tuples)."""
    try:
        reading = read_export(source, batch_points=batch_points, resume=resume)
    except ExportUnreadable as exc:
        _send(out, "unreadable", str(exc))
        return
    with reading:
        _send(out, "opened", reading.xml_size)
        try:
            for batch in reading.batches():
                _send(
                    out,
                    "batch",
                    [tuple(p) for p in batch.points],
                    batch.records,
                    batch.position,
                    batch.bytes_read,
                    dict(reading.uncovered),
                    dict(reading.unreadable),
                    reading.incomparable,
                )
        except ExportCut as exc:
            _send(out, "cut", str(exc), reading.bytes_read)
        except ExportUnreadable as exc:
            _send(out, "unreadable", str(exc))
        except (zipfile.BadZipFile, zlib.error, EOFError):
            _send(out, "damaged")
        except (BrokenPipeError, ConnectionResetError):
            raise
        except Exception as exc:
            _send(out, "failed", type(exc).__name__)
        else:
            _send(out, "end", reading.bytes_read)


def main(argv: list[str]) -> None:
    """The child's entry: SOURCE BATCH_POINTS RESUME; the messages on stdout."""
    source, batch_points, resume = argv[0], int(argv[1]), int(argv[2])
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        _child(source, batch_points, resume, sys.stdout.buffer)  # (the parent may be gone)
