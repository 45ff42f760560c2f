"""Serve one function with functions-framework, with limits fit for HAE.

``python -m healthlog.localserver --target ingest --source functions/ingest/main.py``
does what ``functions-framework --target ... --source ...`` does (the same app, the
same gunicorn server), and sets two server options its command line cannot:

* ``limit_request_field_size``: HAE sends headers such as ``automation-name`` whose
  value the user types; gunicorn's default (8 KB) would answer 431 before ingest could
  truncate them, so a 600 KB value gets in and is cut by ingest (docs/hae-format.md, "Headers");
* ``graceful_timeout``: on SIGTERM the fold's pass in hand finishes inside this window
  (its own budget is shorter, ``HEALTHLOG_PASS_BUDGET_S``).
"""

from __future__ import annotations

import argparse

#: the largest header line accepted; ingest truncates values long before they are kept
MAX_HEADER_BYTES = 1024 * 1024
GRACEFUL_TIMEOUT_S = 30


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m healthlog.localserver")
    parser.add_argument("--target", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)

    from functions_framework import create_app
    from functions_framework._http import create_server

    app = create_app(args.target, args.source, "http")  # type: ignore[no-untyped-call]
    create_server(  # type: ignore[no-untyped-call]
        app,
        False,
        limit_request_field_size=MAX_HEADER_BYTES,
        graceful_timeout=GRACEFUL_TIMEOUT_S,
    ).run(args.host, args.port)


if __name__ == "__main__":
    main()
