"""Faults injected into each port, seen through the real ingest and the real fold.

Ingest (``ingest.accept`` on a real SQLite journal and real archives):

* archive unavailable (write or commit) or too slow (an S3 endpoint that never
  answers): 503 with Retry-After, no journal row, nothing archived;
* journal busy (the adapter's own retries spent; ingest adds none) or down: one insert,
  503, and the archived body stays where it is (ingest cannot delete; design "keep and
  reconcile") until ``reconcile`` journals it and the fold folds it;
* the token lookup itself failing: 503, nothing read or stored.

Fold (``Player`` / ``FoldPass``): object store errors, S3 throttling, a missing archive
volume, a busy journal at each step, cancellation, a failed outcome write: the delivery
stays ``pending`` with its attempt released, and folds on a later pass. A missing body
is ``failed`` (``missing_body``).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from healthlog import ingest
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.archive.s3 import S3Archive
from healthlog.config import Settings
from healthlog.errors import (
    Cancelled,
    HealthlogError,
    JournalBusy,
    JournalUnavailable,
)
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player, PlayOptions
from healthlog.hae import parse
from healthlog.ingest import IngestDeps, IngestRequest, Reply
from healthlog.ingest.wake import NullWaker
from healthlog.journal.port import Journal
from healthlog.model import OutcomeClass, ParseResult, ParseStatus
from healthlog.ops.reconcile import reconcile
from healthlog.testing import FaultyArchive, FaultyJournal, MemoryArchive

from tests.conftest import Phone
from tests.reliability.harness import steps_body

BODY = steps_body(7, points=20)
RETRY_AFTER = 13


# --- ingest ----------------------------------------------------------------------------


@dataclass
class Ingest:
    journal: FaultyJournal
    archive: Archive
    token: str
    settings: Settings

    def post(self, body: bytes = BODY) -> Reply:
        stream = iter([body[i : i + 4096] for i in range(0, len(body), 4096)])
        request = IngestRequest(
            headers={"Authorization": f"Bearer {self.token}"},
            content_length=len(body),
            read=lambda n: next(stream, b""),
        )
        deps = IngestDeps(self.journal, self.archive, NullWaker(), self.settings)
        return ingest.accept(deps, request)


def make_ingest(journal: Journal, archive: Archive, phone: Phone) -> Ingest:
    settings = Settings(retry_after_s=RETRY_AFTER)
    return Ingest(FaultyJournal(journal), archive, phone.token, settings)


def assert_retry_later(reply: Reply) -> None:
    assert reply.status == 503
    assert dict(reply.headers)["Retry-After"] == str(RETRY_AFTER)
    assert f"{RETRY_AFTER} seconds" in reply.body


@pytest.mark.parametrize("fault", ["fail_write", "fail_commit"])
def test_archive_unavailable_at_ingest_is_503_and_no_row(
    journal: Journal, phone: Phone, fault: str
) -> None:
    inner = MemoryArchive()
    faulty = FaultyArchive(inner)
    setattr(faulty, fault, True)
    rig = make_ingest(journal, faulty, phone)
    reply = rig.post()
    assert_retry_later(reply)
    assert "storage is not available" in reply.body
    assert list(inner.keys()) == []
    assert journal.deliveries() == []
    assert rig.journal.calls["insert_delivery"] == 0


@contextmanager
def black_hole() -> Iterator[str]:
    """An endpoint that accepts connections and never answers: a store that hangs."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        listener.close()


def test_archive_too_slow_at_ingest_is_503_and_no_row(
    journal: Journal, phone: Phone, dummy_aws_env: None
) -> None:
    """The S3 adapter's read timeout turns a hanging store into 503, not a hung request."""
    import boto3

    with black_hole() as endpoint:
        client = boto3.session.Session().client(
            "s3",
            region_name="us-east-1",
            endpoint_url=endpoint,
            config=Config(connect_timeout=0.5, read_timeout=0.5, retries={"total_max_attempts": 1}),
        )
        rig = make_ingest(journal, S3Archive("bucket", client=client), phone)
        reply = rig.post()
    assert_retry_later(reply)
    assert "storage is not available" in reply.body
    assert journal.deliveries() == []


def test_journal_busy_at_ingest_is_one_insert_and_503_and_the_next_export_is_accepted(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    """JournalBusy comes once the adapter's own retries are spent: ingest adds none."""
    rig = make_ingest(journal, archive, phone)
    rig.journal.fail("insert_delivery", JournalBusy, times=1)
    reply = rig.post()
    assert_retry_later(reply)
    assert rig.journal.calls["insert_delivery"] == 1
    assert journal.deliveries() == []

    again = rig.post()  # the phone exports again after Retry-After
    assert again.status == 200, again.body
    assert rig.journal.calls["insert_delivery"] == 2
    assert [d.id for d in journal.deliveries()] == [json.loads(again.body)["id"]]


@pytest.mark.parametrize("error", [JournalBusy, JournalUnavailable])
def test_journal_down_at_ingest_is_503_and_the_archived_body_is_reconciled_then_folded(
    journal: Journal, archive: Archive, phone: Phone, error: type[HealthlogError]
) -> None:
    """Keep and reconcile: the body stays archived (ingest may not delete), reconcile
    journals it with its original received_at, and the fold folds it."""
    rig = make_ingest(journal, archive, phone)
    rig.journal.fail("insert_delivery", error)
    reply = rig.post()
    assert_retry_later(reply)
    assert "too busy" in reply.body
    assert rig.journal.calls["insert_delivery"] == 1  # no retry on top of the adapter's
    assert journal.deliveries() == []
    (key,) = archive.keys()
    assert archive.read(key) == BODY  # kept, whole

    rig.journal.heal()
    report = reconcile(journal, archive)
    assert (report.journalled, report.present) == (1, 0)
    (delivery,) = journal.deliveries()
    assert (delivery.archive_key, delivery.status, delivery.size) == (
        key,
        ParseStatus.PENDING,
        len(BODY),
    )
    assert FoldPass(journal, Player(journal, archive)).pass_once().tally.classes == {"parsed": 1}
    assert journal.summary().points == 20


def test_token_lookup_failing_is_503_and_nothing_is_read(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    rig = make_ingest(journal, archive, phone)
    rig.journal.fail("account_by_token_hash", JournalUnavailable)
    reply = rig.post()
    assert_retry_later(reply)
    assert list(archive.keys()) == []
    assert journal.deliveries() == []


# --- fold ------------------------------------------------------------------------------


def status_of(journal: Journal, delivery_id: str) -> tuple[ParseStatus, int]:
    delivery = journal.get_delivery(delivery_id)
    assert delivery is not None
    return delivery.status, delivery.attempts


@pytest.mark.parametrize(
    ("method", "error"),
    [
        ("get_delivery", JournalBusy),
        ("get_account", JournalUnavailable),
        ("begin_attempt", JournalBusy),
        ("write_outcome", JournalBusy),
        ("write_outcome", JournalUnavailable),
        ("write_outcome", Cancelled),
    ],
)
def test_journal_fault_during_fold_leaves_pending_and_a_later_pass_folds_it(
    journal: Journal, archive: Archive, phone: Phone, method: str, error: type[HealthlogError]
) -> None:
    delivery = phone.send(BODY)
    faulty = FaultyJournal(journal)
    faulty.fail(method, error)
    fold = FoldPass(faulty, Player(faulty, archive))
    report = fold.pass_once()
    assert dict(report.tally.classes) == {"deferred": 1}
    assert dict(report.tally.reasons) == {error.__name__: 1}
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)  # attempt released
    assert journal.summary().points == 0  # nothing half-written

    faulty.heal()
    assert dict(fold.pass_once().tally.classes) == {"parsed": 1}
    assert status_of(journal, delivery) == (ParseStatus.PARSED, 0)


def test_failed_outcome_write_of_a_failure_leaves_pending_not_failed(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    """A body that cannot be folded, whose ``failed`` cannot be written either: pending."""
    delivery = phone.send(b"{not json}")
    faulty = FaultyJournal(journal)
    faulty.fail("write_outcome", JournalBusy)
    outcome = Player(faulty, archive).play(delivery)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.DEFERRED, "OutcomeWriteFailed")
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)
    faulty.heal()
    assert Player(faulty, archive).play(delivery).reason == "unreadable"
    assert status_of(journal, delivery) == (ParseStatus.FAILED, 0)


def test_busy_selection_ends_the_pass_and_the_next_pass_folds(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    delivery = phone.send(BODY)
    faulty = FaultyJournal(journal)
    fold = FoldPass(faulty, Player(faulty, archive))
    faulty.fail("pending_page", JournalBusy, times=1)
    report = fold.pass_once()
    assert (report.stopped, report.selected) == ("selection_failed", 0)
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)
    assert dict(fold.pass_once().tally.classes) == {"parsed": 1}


def test_object_store_error_during_fold_leaves_pending(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    delivery = phone.send(BODY)
    faulty = FaultyArchive(archive, fail_read=True)
    fold = FoldPass(journal, Player(journal, faulty))
    assert dict(fold.pass_once().tally.reasons) == {"ArchiveUnavailable": 1}
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)
    faulty.fail_read = False
    assert dict(fold.pass_once().tally.classes) == {"parsed": 1}


def test_archive_volume_gone_during_fold_leaves_pending_not_missing(
    journal: Journal, tmp_path: Path, phone: Phone
) -> None:
    """An unmounted archive folder is the store being unavailable, not every body missing."""
    delivery = phone.send(BODY)
    (tmp_path / "archive").rename(tmp_path / "elsewhere")
    fold = FoldPass(journal, Player(journal, LocalArchive(tmp_path / "archive")))
    assert dict(fold.pass_once().tally.reasons) == {"ArchiveUnavailable": 1}
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)
    (tmp_path / "elsewhere").rename(tmp_path / "archive")
    assert dict(fold.pass_once().tally.classes) == {"parsed": 1}


def test_archive_volume_unmounted_leaves_pending_not_missing(
    journal: Journal, tmp_path: Path, phone: Phone
) -> None:
    """Unmounted, the volume leaves its mount point behind: an empty, unmarked folder."""
    delivery = phone.send(BODY)
    (tmp_path / "archive").rename(tmp_path / "elsewhere")
    (tmp_path / "archive").mkdir()
    fold = FoldPass(journal, Player(journal, LocalArchive(tmp_path / "archive")))
    assert dict(fold.pass_once().tally.reasons) == {"ArchiveUnavailable": 1}
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)
    (tmp_path / "archive").rmdir()
    (tmp_path / "elsewhere").rename(tmp_path / "archive")
    assert dict(fold.pass_once().tally.classes) == {"parsed": 1}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: object) -> Iterator[bytes]:
        yield self._body


def slow_down(**_: object) -> AWSResponse:
    """S3's throttling reply, for botocore's before-send hook."""
    xml = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
    return AWSResponse("http://injected", 503, cast(Any, {}), _Raw(xml))


def test_s3_throttling_during_fold_leaves_pending_and_folds_when_it_stops(
    journal: Journal, phone: Phone, s3_client: Any, s3_bucket: str
) -> None:
    """Throttling goes through botocore's own retries and error parsing, then the adapter."""
    store = S3Archive(s3_bucket, client=s3_client)
    s3_phone = Phone(journal, store, phone.account, phone.token)
    delivery = s3_phone.send(BODY)
    fold = FoldPass(journal, Player(journal, store))
    handler = cast(Callable[..., None], slow_down)
    s3_client.meta.events.register("before-send.s3.GetObject", handler)
    try:
        report = fold.pass_once()
    finally:
        s3_client.meta.events.unregister("before-send.s3.GetObject", handler)
    assert dict(report.tally.reasons) == {"ArchiveUnavailable": 1}
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)
    assert dict(fold.pass_once().tally.classes) == {"parsed": 1}


def test_cancellation_during_a_fold_lets_it_finish_and_leaves_the_rest_pending(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    """Cancel is checked between deliveries: the one in hand finishes, the others wait."""
    sent = [phone.send(steps_body(n, points=5)) for n in range(3)]
    cancel = threading.Event()

    def parse_then_cancel(body: bytes, **kw: Any) -> ParseResult:
        cancel.set()  # the signal arrives while the first delivery is being folded
        return parse(body, **kw)

    fold = FoldPass(journal, Player(journal, archive, parse=parse_then_cancel))
    report = fold.pass_once(cancel=cancel)
    assert report.stopped == "cancelled"
    assert [status_of(journal, d)[0] for d in sent] == [
        ParseStatus.PARSED,
        ParseStatus.PENDING,
        ParseStatus.PENDING,
    ]
    report = FoldPass(journal, Player(journal, archive)).pass_once()
    assert dict(report.tally.classes) == {"parsed": 2}


def test_cancellation_raised_inside_a_fold_leaves_it_pending(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    delivery = phone.send(BODY)

    def cancelled(body: bytes, **kw: Any) -> ParseResult:
        raise Cancelled()

    outcome = Player(journal, archive, parse=cancelled).play(delivery)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.DEFERRED, "Cancelled")
    assert status_of(journal, delivery) == (ParseStatus.PENDING, 0)


def test_missing_body_at_fold_time_is_failed_missing_body(
    journal: Journal, tmp_path: Path, phone: Phone
) -> None:
    delivery = phone.send(BODY)
    stored = journal.get_delivery(delivery)
    assert stored is not None
    (tmp_path / "archive" / stored.archive_key).unlink()
    outcome = Player(journal, phone.archive).play(delivery)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.FAILED, "missing_body")
    after = journal.get_delivery(delivery)
    assert after is not None
    assert (after.status, after.failure, after.points) == (ParseStatus.FAILED, "missing_body", 0)


def test_circumstances_that_also_block_releasing_the_attempt_never_make_it_crashed(
    journal: Journal, archive: Archive, phone: Phone
) -> None:
    """A busy journal at the outcome write and again at the release, pass after pass,
    is still a circumstance: it must not add up to ``failed`` (``crashed``)."""
    delivery = phone.send(BODY)
    faulty = FaultyJournal(journal)
    player = Player(faulty, archive, PlayOptions(max_attempts=3))
    for _ in range(5):
        faulty.fail("write_outcome", JournalBusy)
        faulty.fail("release_attempt", JournalBusy)
        assert player.play(delivery).klass is OutcomeClass.DEFERRED
    faulty.heal()
    outcome = player.play(delivery)
    assert outcome.klass is OutcomeClass.PARSED, outcome
    assert status_of(journal, delivery) == (ParseStatus.PARSED, 0)


# --- the wrapper itself --------------------------------------------------------------------


def test_faulty_journal_fails_the_chosen_calls_only(journal: Journal) -> None:
    faulty = FaultyJournal(journal)
    faulty.fail("accounts", JournalUnavailable, times=2)
    for _ in range(2):
        with pytest.raises(JournalUnavailable, match="injected fault: accounts"):
            faulty.accounts()
    assert faulty.accounts() == []
    assert faulty.calls["accounts"] == 3
    assert faulty.summary().backlog == 0
    with pytest.raises(ValueError, match="no method"):
        faulty.fail("acounts")
