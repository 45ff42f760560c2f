"""The physical floor of the ingest benchmark: the no-op plus the durable writes ingest owes.

Served by functions-framework exactly like ``noop_function.py`` and
``functions/ingest/main.py``. It reads the request stream in the same 64 KiB chunks,
writes them to a new file in ``$BENCH_DURABLE_DIR/bodies`` and fsyncs it and its
directory, appends one line to ``$BENCH_DURABLE_DIR/journal.log`` (an append-only file)
and fsyncs that, then answers 200 with a streamed reply. Those are the disk's part of
"200 only after the body and its row are durable", with nothing else: no token, no
shape check, no temporary name, no SQL. Ingest's throughput over this one says how close
ingest comes to what the disk allows.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import flask

CHUNK_BYTES = 64 * 1024
REPLY = b'{"status": "stored"}'

_FOLDER = Path(os.environ["BENCH_DURABLE_DIR"])
_BODIES = _FOLDER / "bodies"
_BODIES.mkdir(parents=True, exist_ok=True)
_lock = threading.Lock()
_fds: dict[str, int] = {}


def _fd(name: str, path: Path, flags: int) -> int:
    """One descriptor per process for the bodies' folder and the append-only file."""
    with _lock:
        if name not in _fds:
            _fds[name] = os.open(path, flags, 0o600)
        return _fds[name]


def durable_noop(request: flask.Request) -> flask.Response:
    import flask

    name = uuid.uuid4().hex
    read = request.stream.read
    fd = os.open(_BODIES / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        size = 0
        while chunk := read(CHUNK_BYTES):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
            size += len(chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.fsync(_fd("bodies", _BODIES, os.O_RDONLY))
    journal = _fd("journal", _FOLDER / "journal.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(journal, f"{name} {size}\n".encode())  # one write: O_APPEND keeps it whole
    os.fsync(journal)
    response = flask.Response(iter([REPLY]), status=200, content_type="application/json")
    response.headers["Content-Length"] = str(len(REPLY))
    return response
