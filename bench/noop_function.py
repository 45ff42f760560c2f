"""The floor of the ingest benchmark: a function that does nothing but take the body.

Served by functions-framework exactly like ``functions/ingest/main.py``: it reads the
request stream in the same 64 KiB chunks, throws them away and answers 200 with a
streamed reply (which keeps functions-framework's after-request hook from reading the
body again). Whatever ingest does beyond this is what the benchmark's ratio prices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import flask

CHUNK_BYTES = 64 * 1024
REPLY = b'{"status": "discarded"}'


def noop(request: flask.Request) -> flask.Response:
    import flask

    read = request.stream.read
    while read(CHUNK_BYTES):
        pass
    response = flask.Response(iter([REPLY]), status=200, content_type="application/json")
    response.headers["Content-Length"] = str(len(REPLY))
    return response
