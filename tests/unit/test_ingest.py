"""ingest.accept() on a real SQLite journal and real archives: 200 only once the body is safe.

Every rejection is checked for "nothing half-written": no archived body and no row.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from healthlog import ids, ingest, tokens
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.ingest import IngestDeps, IngestRequest, Reply, accept
from healthlog.journal.sqlite import SqliteJournal
from healthlog.log import JsonFormatter
from healthlog.model import Account, NewDelivery, ParseStatus
from healthlog.testing import FaultyArchive, MemoryArchive

from tests.conftest import samples

LIMIT = 200_000  # bytes; over three 64 KiB chunks, so streaming is exercised


class CountingWaker:
    def __init__(self) -> None:
        self.wakes = 0

    def wake(self) -> None:
        self.wakes += 1

    def flush(self, timeout_s: float) -> bool:
        return True


class BrokenWaker:
    def wake(self) -> None:
        raise RuntimeError("the wake-up cannot be sent")

    def flush(self, timeout_s: float) -> bool:
        return False


class Body:
    """A request body stream that records how it was read."""

    def __init__(self, data: bytes, *, fail_after: int | None = None) -> None:
        self._stream = io.BytesIO(data)
        self._fail_after = fail_after
        self.reads: list[int] = []
        self.size = len(data)

    def read(self, n: int) -> bytes:
        self.reads.append(n)
        if self._fail_after is not None and self._stream.tell() >= self._fail_after:
            raise OSError("connection reset by peer")
        if self._fail_after is not None:
            n = min(n, self._fail_after - self._stream.tell())
        return self._stream.read(n)


@dataclass
class Rig:
    journal: SqliteJournal
    archive: Archive
    waker: CountingWaker
    settings: Settings
    account: Account
    token: str

    @property
    def deps(self) -> IngestDeps:
        return IngestDeps(self.journal, self.archive, self.waker, self.settings)

    def post(
        self,
        body: bytes | Body,
        headers: dict[str, str] | None = None,
        *,
        chunked: bool = False,
        content_length: int | None = None,
        deps: IngestDeps | None = None,
    ) -> Reply:
        stream = body if isinstance(body, Body) else Body(body)
        if headers is None:
            headers = {"Authorization": f"Bearer {self.token}"}
        if content_length is None and not chunked:
            content_length = stream.size
        request = IngestRequest(headers=headers, content_length=content_length, read=stream.read)
        return accept(deps or self.deps, request)

    def assert_nothing_stored(self) -> None:
        assert list(self.archive.keys()) == []
        assert self.journal.deliveries() == []


def make_rig(tmp_path: Path, archive: Archive, **settings: object) -> Iterator[Rig]:
    values: dict[str, object] = {
        "journal_url": f"sqlite:///{tmp_path}/journal.db",
        "archive_url": f"file://{tmp_path}/archive",
        "max_body_bytes": LIMIT,
        "retry_after_s": 7,
    }
    values.update(settings)
    config = Settings(**values)  # type: ignore[arg-type]
    journal = SqliteJournal(
        str(tmp_path / "journal.db"),
        busy_timeout_ms=config.busy_timeout_ms,
        retries=config.journal_retries,
    )
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account("alice", tokens.hash_token(token))
    yield Rig(journal, archive, CountingWaker(), config, account, token)
    journal.close()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    yield from make_rig(tmp_path, LocalArchive(tmp_path / "archive"))


def sample_body() -> bytes:
    return max(samples(), key=lambda p: p.stat().st_size).read_bytes()


# --- 200 -------------------------------------------------------------------------------


def test_accepted_body_is_archived_byte_for_byte_and_journalled_pending(rig: Rig) -> None:
    """A real HAE body: 200 only with the exact bytes archived and a pending row."""
    body = sample_body()
    reply = rig.post(body, {"Authorization": f"Bearer {rig.token}"})

    assert reply.status == 200, reply.body
    assert reply.content_type == "application/json"
    answer = json.loads(reply.body)
    assert answer["status"] == "pending"
    delivery = rig.journal.get_delivery(answer["id"])
    assert delivery is not None
    assert delivery.status is ParseStatus.PENDING
    assert delivery.account_id == rig.account.id
    # the id carries received_at to the microsecond: what reconcile relies on
    assert delivery.received_at == ids.received_at_of(delivery.id)
    at = delivery.received_at.isoformat(timespec="microseconds")
    assert answer["received_at"] == at.replace("+00:00", "Z")
    assert delivery.archive_key == body_key(rig.account.id, delivery.id, "application/json")
    assert delivery.size == len(body)
    assert delivery.content_type == "application/json"
    assert rig.archive.read(delivery.archive_key) == body
    assert rig.waker.wakes == 1


def test_body_is_streamed_in_chunks_of_at_most_64_kib(rig: Rig) -> None:
    """The body is never read whole: memory does not grow with the body."""
    body = Body(b'{"data": "' + b"x" * (LIMIT - 20) + b'"}')
    reply = rig.post(body, chunked=True)
    assert reply.status == 200, reply.body
    assert max(body.reads) <= ingest.CHUNK_BYTES
    assert len(body.reads) >= 3


def test_blank_space_around_the_object_is_accepted(rig: Rig) -> None:
    assert rig.post(b' \r\n\t{"data": {}}\n\n ').status == 200


def test_multibyte_character_split_across_chunks_is_valid_utf8(rig: Rig) -> None:
    """The UTF-8 check is incremental: a character cut by a chunk boundary is fine."""
    head = b'{"a": "' + b"x" * (ingest.CHUNK_BYTES - 8)  # "é" straddles the boundary
    body = head + "é".encode() + b'"}'
    assert body[ingest.CHUNK_BYTES - 1 : ingest.CHUNK_BYTES + 1] == "é".encode()
    reply = rig.post(body)
    assert reply.status == 200, reply.body
    delivery = rig.journal.deliveries()[0]
    assert rig.archive.read(delivery.archive_key) == body


def test_a_body_at_the_limit_is_accepted(rig: Rig) -> None:
    body = b"{" + b" " * (LIMIT - 2) + b"}"
    assert rig.post(body).status == 200
    assert rig.post(body, chunked=True).status == 200


def test_shape_only_body_that_is_not_json_is_accepted_for_the_fold_to_fail(rig: Rig) -> None:
    """Full JSON validity is the fold's business (it becomes failed/unreadable there)."""
    assert rig.post(b"{ not json }").status == 200


# --- 401 -------------------------------------------------------------------------------

HEADER_FORMS = [
    ("Authorization", "Bearer {}"),
    ("X-API-Key", "{}"),
    ("api-key", "{}"),
]


@pytest.mark.parametrize(("name", "form"), HEADER_FORMS)
def test_each_token_header_form_is_accepted(rig: Rig, name: str, form: str) -> None:
    assert rig.post(b"{}", {name: form.format(rig.token)}).status == 200


@pytest.mark.parametrize(("name", "form"), HEADER_FORMS)
def test_wrong_token_is_401_and_the_body_is_not_read(rig: Rig, name: str, form: str) -> None:
    body = Body(b"{}")
    reply = rig.post(body, {name: form.format(tokens.new_token())})
    assert reply.status == 401
    assert "does not know this access token" in reply.body
    assert body.reads == []
    rig.assert_nothing_stored()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer   "},
        {"Authorization": f"Basic {tokens.new_token()}"},
        {"X-API-Key": ""},
        {"Content-Type": "application/json"},
    ],
    ids=["none", "bearer-empty", "bearer-blank", "basic", "api-key-empty", "unrelated"],
)
def test_missing_token_is_401_naming_the_header_to_add(rig: Rig, headers: dict[str, str]) -> None:
    body = Body(b"{}")
    reply = rig.post(body, headers)
    assert reply.status == 401
    assert "Authorization" in reply.body and "Health Auto Export" in reply.body
    assert dict(reply.headers)["WWW-Authenticate"] == "Bearer"
    assert body.reads == []
    rig.assert_nothing_stored()


def test_header_names_and_bearer_scheme_are_case_insensitive(rig: Rig) -> None:
    reply = rig.post(
        b"{}",
        {"AUTHORIZATION": f"bearer {rig.token}", "Automation-Name": "Daily", "SESSION-ID": "s1"},
    )
    assert reply.status == 200, reply.body
    delivery = rig.journal.deliveries()[0]
    assert delivery.headers == (("automation-name", "Daily"), ("session-id", "s1"))


# --- 413 -------------------------------------------------------------------------------


def test_declared_length_over_the_limit_is_413_before_reading(rig: Rig) -> None:
    body = Body(b"{" + b" " * LIMIT + b"}")
    reply = rig.post(body)
    assert reply.status == 413
    assert "Batch Requests" in reply.body
    assert "195.3 KB" in reply.body  # the limit, for a person
    assert body.reads == []
    rig.assert_nothing_stored()


def test_chunked_body_one_byte_over_the_limit_is_413_and_cut(rig: Rig) -> None:
    body = Body(b"{" + b" " * (LIMIT - 1) + b"}")  # LIMIT + 1 bytes
    reply = rig.post(body, chunked=True)
    assert reply.status == 413
    assert "Batch Requests" in reply.body
    assert rig.waker.wakes == 0
    rig.assert_nothing_stored()


def test_limit_is_named_in_megabytes_for_the_default() -> None:
    assert "at most 100 MB per request" in ingest.too_large_text(Settings().max_body_bytes, None)


# --- 400 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[1,2]", "JSON object"),
        (b"not json", "JSON object"),
        (b'"str"', "JSON object"),
        (b"null", "JSON object"),
        (b"{", "JSON object"),
        (b'{"a": 1} trailing', "JSON object"),
        (b"", "no body"),
        (b" \n\t ", "no body"),
        (b'{"a": "\xff"}', "UTF-8"),
        (b'{"a": "\xc3("}', "UTF-8"),
        (b"\xef\xbb\xbf{}", "JSON object"),  # a BOM is not JSON's blank space
    ],
    ids=[
        "array",
        "not-json",
        "string",
        "null",
        "unclosed",
        "trailing",
        "empty",
        "blank",
        "invalid-utf8",
        "bad-continuation",
        "bom",
    ],
)
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_not_a_json_object_is_400_and_nothing_is_stored(
    rig: Rig, body: bytes, reason: str, chunked: bool
) -> None:
    reply = rig.post(body, chunked=chunked)
    assert reply.status == 400
    assert reason in reply.body
    assert "Health Auto Export" in reply.body or "export again" in reply.body
    assert rig.waker.wakes == 0
    rig.assert_nothing_stored()


def test_wrong_first_byte_stops_reading_at_the_first_chunk(rig: Rig) -> None:
    body = Body(b"[" + b"1," * LIMIT)
    assert rig.post(body, chunked=True).status == 400
    assert len(body.reads) == 1


def test_body_shorter_than_its_declared_length_stores_nothing(rig: Rig) -> None:
    """The client hung up half-way: the server's reader returns the end early."""
    body = Body(b'{"data": {}}')
    reply = rig.post(body, content_length=1000)
    assert reply.status == 400
    assert "before the whole body arrived" in reply.body
    rig.assert_nothing_stored()


def test_body_stream_failing_half_way_stores_nothing(rig: Rig) -> None:
    """A chunked body cut off: the server's reader raises."""
    body = Body(b"{" + b" " * 150_000 + b"}", fail_after=70_000)
    reply = rig.post(body, chunked=True)
    assert reply.status == 400
    rig.assert_nothing_stored()


def test_other_methods_are_405(rig: Rig) -> None:
    request = IngestRequest(
        headers={"Authorization": f"Bearer {rig.token}"},
        content_length=0,
        read=Body(b"").read,
        method="GET",
    )
    reply = accept(rig.deps, request)
    assert reply.status == 405
    assert dict(reply.headers)["Allow"] == "POST"


# --- 503 -------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["fail_write", "fail_commit"])
def test_archive_unavailable_is_503_with_retry_after_and_no_row(tmp_path: Path, fault: str) -> None:
    inner = MemoryArchive()
    faulty = FaultyArchive(inner)
    setattr(faulty, fault, True)
    for rig in make_rig(tmp_path, faulty):
        reply = rig.post(sample_body())
        assert reply.status == 503
        assert dict(reply.headers)["Retry-After"] == "7"
        assert "storage is not available" in reply.body
        assert "7 seconds" in reply.body
        assert list(inner.keys()) == []
        assert rig.journal.deliveries() == []
        assert rig.waker.wakes == 0


def test_an_unmounted_archive_volume_is_503_and_nothing_lands_on_the_mount_point(
    tmp_path: Path,
) -> None:
    """The bare mount point is an empty folder without the archive's marker."""
    mount = tmp_path / "archive"
    mount.mkdir()
    for rig in make_rig(tmp_path, LocalArchive(mount)):
        reply = rig.post(sample_body())
        assert reply.status == 503
        assert "storage is not available" in reply.body
        assert os.listdir(mount) == []
        assert rig.journal.deliveries() == []


def test_busy_journal_is_503_and_leaves_the_body_archived_for_reconcile(tmp_path: Path) -> None:
    """A busy journal after every retry: 503, and the archived body has no row.

    That body is reconcile's input; ingest never deletes what it archived.
    """
    for rig in make_rig(
        tmp_path, LocalArchive(tmp_path / "archive"), busy_timeout_ms=1, journal_retries=1
    ):
        holder = sqlite3.connect(tmp_path / "journal.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            reply = rig.post(sample_body())
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert reply.status == 503
        assert dict(reply.headers)["Retry-After"] == "7"
        assert "too busy" in reply.body
        archived = list(rig.archive.keys())
        assert len(archived) == 1
        assert rig.archive.read(archived[0]) == sample_body()
        assert rig.journal.deliveries() == []
        assert rig.waker.wakes == 0


class CrashingJournal(SqliteJournal):
    """A journal whose insert fails in a way nobody planned for."""

    def insert_delivery(self, new: NewDelivery) -> bool:
        raise RuntimeError("secret detail from deep inside")


def test_unexpected_exception_is_503_without_detail(
    rig: Rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crashing = CrashingJournal(str(tmp_path / "journal.db"))
    deps = IngestDeps(crashing, rig.archive, rig.waker, rig.settings)
    with caplog.at_level(logging.DEBUG, logger="healthlog"):
        reply = rig.post(b"{}", deps=deps)
    crashing.close()
    assert reply.status == 503
    assert dict(reply.headers)["Retry-After"] == "7"
    assert "secret" not in reply.body and "Traceback" not in reply.body
    crash = [r for r in caplog.records if r.getMessage() == "ingest.crashed"]
    assert len(crash) == 1
    assert crash[0].error == "RuntimeError"  # type: ignore[attr-defined]
    assert "secret" not in JsonFormatter().format(crash[0])


# --- headers, waker, logs ----------------------------------------------------------------


def test_huge_automation_name_is_accepted_and_stored_truncated(rig: Rig) -> None:
    huge = "n" * 600_000
    reply = rig.post(
        b"{}",
        {
            "Authorization": f"Bearer {rig.token}",
            "automation-name": huge,
            "automation-id": "0F1E2D3C-AAAA-BBBB-CCCC-000000000000",
            "automation-aggregation": "minutes",
            "automation-period": "sinceLastSync",
            "session-id": "S-1",
            "x-unrelated": "not kept",
        },
    )
    assert reply.status == 200, reply.body
    delivery = rig.journal.deliveries()[0]
    limit = rig.settings.header_max_chars
    assert delivery.headers == (
        ("automation-name", "n" * limit + "…"),
        ("automation-id", "0F1E2D3C-AAAA-BBBB-CCCC-000000000000"),
        ("automation-aggregation", "minutes"),
        ("automation-period", "sinceLastSync"),
        ("session-id", "S-1"),
    )


def test_broken_waker_still_gives_200(rig: Rig) -> None:
    deps = IngestDeps(rig.journal, rig.archive, BrokenWaker(), rig.settings)
    reply = rig.post(b"{}", deps=deps)
    assert reply.status == 200
    assert len(rig.journal.deliveries()) == 1


def test_one_log_line_per_request_without_secrets(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    huge = "SECRETNAME" * 60_000
    body = b'{"data": {"metrics": [{"name": "BODYVALUE"}]}}'
    with caplog.at_level(logging.DEBUG, logger="healthlog"):
        ok = rig.post(body, {"X-API-Key": rig.token, "automation-name": huge})
        bad = rig.post(b"[1]", {"X-API-Key": rig.token})
        denied = rig.post(body, {"X-API-Key": "hl_wrong"})
    lines = [r for r in caplog.records if r.getMessage() == "ingest.request"]
    assert len(lines) == 3
    first, second, third = (vars(r) for r in lines)
    assert first["status"] == 200 and first["reason"] is None
    assert first["delivery_id"] == json.loads(ok.body)["id"]
    assert first["account_id"] == rig.account.id
    assert first["size"] == len(body)
    assert isinstance(first["duration_ms"], float)
    assert (second["status"], second["reason"]) == (bad.status, "not_object")
    assert (third["status"], third["reason"], third["account_id"]) == (
        denied.status,
        "bad_token",
        None,
    )
    text = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    for secret in (rig.token, "hl_wrong", "SECRETNAME", "BODYVALUE"):
        assert secret not in text


# --- wiring ------------------------------------------------------------------------------


def test_ingest_deps_are_built_from_settings(tmp_path: Path) -> None:
    from healthlog.ingest.wake import NullWaker
    from healthlog.ops import wiring

    settings = Settings(
        journal_url=f"sqlite:///{tmp_path}/w.db", archive_url=f"file://{tmp_path}/archive"
    )
    deps = wiring.ingest_deps(settings)
    try:
        assert isinstance(deps.journal, SqliteJournal)
        assert isinstance(deps.archive, LocalArchive)
        assert isinstance(deps.waker, NullWaker)
        assert deps.settings is settings
    finally:
        deps.journal.close()


def test_dependencies_that_cannot_be_built_give_503_without_detail(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(retry_after_s=5)
    with caplog.at_level(logging.DEBUG, logger="healthlog"):
        reply = ingest.unavailable(settings, OSError("/secret/path is read-only"))
    assert reply.status == 503
    assert dict(reply.headers)["Retry-After"] == "5"
    assert "secret" not in reply.body
    assert "secret" not in "\n".join(JsonFormatter().format(r) for r in caplog.records)


@pytest.mark.parametrize(
    "claimed",
    [
        "application/vnd.healthlog.apple-health-export+zip",
        "Application/VND.healthlog.apple-health-export+xml; charset=utf-8",
    ],
)
def test_a_phone_body_claiming_an_export_type_is_stored_as_json(rig: Rig, claimed: str) -> None:
    """Only `healthlog import` makes an export delivery: a posted body that claims its
    type is a JSON delivery, so the fold never unpacks a phone's body as an export."""
    reply = rig.post(
        sample_body(), {"Authorization": f"Bearer {rig.token}", "Content-Type": claimed}
    )
    assert reply.status == 200, reply.body
    delivery = rig.journal.get_delivery(json.loads(reply.body)["id"])
    assert delivery is not None and delivery.content_type == "application/json"
    assert delivery.archive_key == body_key(rig.account.id, delivery.id, "application/json")


def test_a_rotated_token_is_still_401_and_counted_for_its_account(rig: Rig) -> None:
    """The phone that kept the token replaced by a rotation: the same 401, nothing
    stored, and the refusal counted for the account (the watch's stale_token rule); a
    stranger's token is counted for no one."""
    old = rig.token
    rig.journal.set_token_hash(rig.account.id, tokens.hash_token(tokens.new_token()))
    for _ in range(2):
        reply = rig.post(b"{}", {"Authorization": f"Bearer {old}"})
        assert reply.status == 401 and "does not know this access token" in reply.body
    assert rig.post(b"{}", {"Authorization": f"Bearer {tokens.new_token()}"}).status == 401
    rig.assert_nothing_stored()
    (stale,) = rig.journal.stale_tokens(rig.account.id)
    assert stale.refused == 2
