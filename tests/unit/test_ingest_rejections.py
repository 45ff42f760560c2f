"""Every way ingest refuses a request: reached through ``accept``, with its exact reply.

The expected status, text and headers are written out here, apart from the table in
``healthlog.ingest.texts`` that produces them, so a change to the table shows up as a
change of behaviour. The log line's reason code is checked with each.
"""

from __future__ import annotations

import logging
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from healthlog.errors import JournalBusy, JournalUnavailable
from healthlog.ingest import IngestDeps, IngestRequest, Reply, accept, texts
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import NewDelivery
from healthlog.testing import FaultyArchive, FaultyJournal, MemoryArchive

from tests.unit.test_ingest import LIMIT, Body, Rig, make_rig

INGEST = Path(texts.__file__).parent
RETRY_AFTER = {"Retry-After": "7"}  # make_rig's retry_after_s
BEARER = {"WWW-Authenticate": "Bearer"}
FORM_BODY = b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n"


class CrashingJournal(SqliteJournal):
    def insert_delivery(self, new: NewDelivery) -> bool:
        raise RuntimeError("nobody planned for this")


def _post(rig: Rig, body: bytes, headers: dict[str, str] | None = None, **kw: object) -> Reply:
    auth = {"Authorization": f"Bearer {rig.token}"}
    return rig.post(body, {**auth, **(headers or {})}, **kw)  # type: ignore[arg-type]


def _method(rig: Rig, tmp: Path) -> Reply:
    read = Body(b"{}").read
    request = IngestRequest({"Authorization": f"Bearer {rig.token}"}, 2, read, method="PUT")
    return accept(rig.deps, request)


def _faulty_journal(error: type[Exception]) -> Callable[[Rig, Path], Reply]:
    def post(rig: Rig, tmp: Path) -> Reply:
        journal = FaultyJournal(rig.journal)
        journal.fail("insert_delivery", error)  # type: ignore[arg-type]
        return _post(rig, b"{}", deps=IngestDeps(journal, rig.archive, rig.waker, rig.settings))

    return post


def _faulty_archive(rig: Rig, tmp: Path) -> Reply:
    archive = FaultyArchive(MemoryArchive())
    archive.fail_write = True
    return _post(rig, b"{}", deps=IngestDeps(rig.journal, archive, rig.waker, rig.settings))


def _crash(rig: Rig, tmp: Path) -> Reply:
    crashing = CrashingJournal(str(tmp / "journal.db"))
    try:
        return _post(rig, b"{}", deps=IngestDeps(crashing, rig.archive, rig.waker, rig.settings))
    finally:
        crashing.close()


# reason -> (how to reach it, status, text (given the request's ref), headers)
Text = Callable[[str], str]
CASES: dict[str, tuple[Callable[[Rig, Path], Reply], int, Text, dict[str, str]]] = {
    "method": (_method, 405, lambda _: texts.METHOD_TEXT, {"Allow": "POST"}),
    "no_token": (lambda r, t: r.post(b"{}", {}), 401, lambda _: texts.NO_AUTH_TEXT, BEARER),
    "not_bearer": (  # the token pasted alone, without "Bearer "
        lambda r, t: r.post(b"{}", {"Authorization": "hl_pasted_alone"}),
        401,
        lambda _: texts.NOT_BEARER_TEXT,
        BEARER,
    ),
    "bad_token": (
        lambda r, t: r.post(b"{}", {"X-API-Key": "hl_unknown"}),
        401,
        lambda _: texts.WRONG_AUTH_TEXT,
        BEARER,
    ),
    "too_large": (
        lambda r, t: _post(r, b"{" + b" " * LIMIT + b"}"),
        413,
        lambda _: texts.too_large_text(LIMIT, LIMIT + 2),
        {},
    ),
    "empty": (lambda r, t: _post(r, b""), 400, lambda _: texts.EMPTY_TEXT, {}),
    "encoding": (
        lambda r, t: _post(r, b"{}", {"Content-Encoding": "br"}),
        415,
        lambda _: texts.ENCODING_TEXT,
        {},
    ),
    "not_form": (
        lambda r, t: _post(r, FORM_BODY, {"Content-Type": "multipart/form-data"}),
        400,
        lambda _: texts.NOT_FORM_TEXT,
        {},
    ),
    "not_utf8": (lambda r, t: _post(r, b'{"\xff"}'), 400, lambda _: texts.NOT_UTF8_TEXT, {}),
    "not_object": (lambda r, t: _post(r, b"[1]"), 400, lambda _: texts.NOT_OBJECT_TEXT, {}),
    "incomplete": (
        lambda r, t: _post(r, b"{}", content_length=10),
        400,
        lambda _: texts.INCOMPLETE_TEXT,
        {},
    ),
    "bad_gzip": (
        lambda r, t: _post(r, b"{not gzip}", {"Content-Encoding": "gzip"}),
        400,
        lambda _: texts.BAD_GZIP_TEXT,
        {},
    ),
    "archive_unavailable": (
        _faulty_archive,
        503,
        lambda ref: texts.archive_unavailable_text(7, ref),
        RETRY_AFTER,
    ),
    "journal_busy": (
        _faulty_journal(JournalBusy),
        503,
        lambda ref: texts.journal_busy_text(7, ref),
        RETRY_AFTER,
    ),
    "journal_unavailable": (
        _faulty_journal(JournalUnavailable),
        503,
        lambda ref: texts.journal_busy_text(7, ref),
        RETRY_AFTER,
    ),
    "internal": (_crash, 503, lambda ref: texts.internal_text(7, ref), RETRY_AFTER),
}


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    yield from make_rig(tmp_path, MemoryArchive())


@pytest.mark.parametrize("reason", sorted(CASES))
def test_each_refusal_is_reached_with_its_status_text_and_headers(
    rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture, reason: str
) -> None:
    reach, status, text, headers = CASES[reason]
    with caplog.at_level(logging.INFO, logger="healthlog.ingest"):
        reply = reach(rig, tmp_path)
    (line,) = [r for r in caplog.records if r.getMessage() == "ingest.request"]
    assert (line.status, line.reason) == (status, reason)  # type: ignore[attr-defined]
    assert reply.status == status
    assert reply.body == text(line.delivery_id)  # type: ignore[attr-defined]
    assert reply.content_type == "text/plain; charset=utf-8"
    assert dict(reply.headers) == headers
    assert rig.journal.deliveries() == []


def test_a_streamed_body_over_the_limit_names_only_the_limit(rig: Rig) -> None:
    reply = _post(rig, b"{" + b" " * LIMIT + b"}", chunked=True)
    assert (reply.status, reply.body) == (413, texts.too_large_text(LIMIT, None))
    assert reply.headers == ()


# --- the table is the one place ----------------------------------------------------------


def test_the_table_has_every_reason_and_every_reason_is_reached_above() -> None:
    assert set(texts.REFUSALS) == set(typing.get_args(texts.Reason)) == set(CASES)
    for reason, refusal in texts.REFUSALS.items():
        assert refusal.status == CASES[reason][1], reason


def _ingest_sources() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(INGEST.glob("*.py"))}


def test_no_refusal_is_built_outside_the_table() -> None:
    """``Rejected`` and every non-200 ``Reply`` come from ``request.reject``/``reply_for``."""
    for name, source in _ingest_sources().items():
        built = re.findall(r"\bRejected\(", source)
        assert len(built) == (2 if name == "request.py" else 0), name  # the class, reject
        replies = re.findall(r"\bReply\(\s*([^,\s]+)", source)
        allowed = {"request.py": ["refusal.status"], "flow.py": ["200"]}.get(name, [])
        assert replies == allowed, name


def test_every_reason_the_code_names_is_in_the_table_and_every_entry_is_named() -> None:
    """mypy holds the names to ``Reason``; this holds the table to what the code uses."""
    used: set[str] = set()
    for source in _ingest_sources().values():
        used |= set(re.findall(r"\b(?:reject|reply_for)\(\s*\"(\w+)\"", source))
        used |= set(re.findall(r"\bnote\.reason = \"(\w+)\"", source))
        for typed in re.findall(r":\s*Reason\s*=(.*)", source):
            used |= set(re.findall(r"\"(\w+)\"", typed))
    assert used == set(texts.REFUSALS)
