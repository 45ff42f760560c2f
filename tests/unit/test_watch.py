"""The watch's rules (healthlog.ops.watch): pure functions, then ``evaluate`` over a journal."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from healthlog import ids
from healthlog.config import Settings
from healthlog.errors import ConfigError
from healthlog.journal.port import StaleToken, Summary
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account, NewDelivery, ParseStatus, Point
from healthlog.ops import watch

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ALICE = Account("a-1", "alice", NOW - timedelta(days=30))


def summary(**counts: int) -> Summary:
    base = {s.value: 0 for s in ParseStatus}
    base.update(counts)
    return Summary(base, None, None, {}, 0)


def test_no_delivery_holds_past_its_hours_and_counts_from_the_account_without_one() -> None:
    assert watch.no_delivery(ALICE, NOW - timedelta(hours=25), NOW, 26) is None
    found = watch.no_delivery(ALICE, NOW - timedelta(hours=27), NOW, 26)
    assert found is not None and found.key == "no_delivery:a-1" and found.account == "alice"
    assert "27 h" in found.line and "2026-12-01 09:00 UTC" in found.line
    assert "Manual Export" in found.advice and "Background App Refresh" in found.advice
    never = watch.no_delivery(ALICE, None, NOW, 26)
    assert never is not None and "none since the account was made" in never.line
    assert watch.no_delivery(ALICE, None, NOW, 0) is None  # off


def test_a_daily_metric_silent_for_its_days_holds_and_a_sparse_one_never() -> None:
    metrics = [
        watch.MetricDays("step_count", "2026-11-28", True),
        watch.MetricDays("heart_rate", "2026-12-01", True),
        watch.MetricDays("weight_body_mass", "2026-10-01", False),
    ]
    found = watch.silent_metrics(ALICE, metrics, date(2026, 12, 2), 3)
    assert [f.key for f in found] == ["silent_metric:a-1:step_count"]
    assert "4 days" in found[0].line and "Manual Export" in found[0].advice
    assert watch.silent_metrics(ALICE, metrics, date(2026, 12, 2), 0) == []


def test_failures_hold_once_per_class_and_partial_once() -> None:
    s = summary(failed=5, partial=2)
    s.failures.update({"unreadable": 3, "deadline": 2})
    found = watch.failures(ALICE, s)
    assert [f.key for f in found] == [
        "failed:a-1:deadline",
        "failed:a-1:unreadable",
        "partial:a-1",
    ]
    assert "2 deliveries failed (deadline)" in found[0].line
    assert "healthlog replay --status failed" in found[0].advice
    assert watch.failures(ALICE, summary()) == []


def test_backlog_and_disk() -> None:
    assert watch.backlog(NOW - timedelta(minutes=10), 3, NOW, 30) is None
    late = watch.backlog(NOW - timedelta(minutes=45), 3, NOW, 30)
    assert late is not None and late.account is None and "45 min" in late.line
    assert watch.backlog(None, 0, NOW, 30) is None
    assert watch.disk("journal", watch.DiskUsage(100, 50), 5) is None
    full = watch.disk("archive", watch.DiskUsage(100 * 2**30, 2 * 2**30), 5)
    assert full is not None and full.key == "disk:archive" and "2.0 % free" in full.line


def test_the_thresholds_are_settings_read_from_the_environment() -> None:
    s = Settings.from_env(
        {"HEALTHLOG_WATCH_NO_DELIVERY_H": "2", "HEALTHLOG_WATCH_SILENT_DAYS": "0"}
    )
    assert (s.watch_no_delivery_h, s.watch_silent_days, s.watch_backlog_min) == (2.0, 0, 30.0)
    with pytest.raises(ConfigError, match="WATCH"):
        Settings.from_env({"HEALTHLOG_WATCH_BACKLOG_MIN": "-1"})
    with pytest.raises(ConfigError, match="WATCH"):
        Settings.from_env({"HEALTHLOG_WATCH_DISK_FREE_PERCENT": "100"})


def test_the_disks_read_are_the_local_ones_only() -> None:
    local = Settings(journal_url="sqlite:////srv/hl/j.db", archive_url="file:///srv/archive")
    assert watch.local_folders(local) == [
        ("journal", Path("/srv/hl")),
        ("archive", Path("/srv/archive")),
    ]
    cloud = Settings(journal_url="postgresql://u@h/db", archive_url="s3://bucket")
    assert watch.local_folders(cloud) == []


def _deliver(journal: SqliteJournal, account: Account, at: datetime) -> NewDelivery:
    delivery_id = ids.new_delivery_id(at)
    new = NewDelivery(delivery_id, account.id, at, f"{account.id}/{delivery_id}.json", 10,
                      "application/json", ())  # fmt: skip
    assert journal.insert_delivery(new)
    return new


def _point(day: str) -> Point:
    return Point("step_count", "qty", "Secret Watch", f"{day}T10:00:00.000000Z", qty=4321.0,
                 utc_offset=0, end=None, text=None, unit="count", extra=None)  # fmt: skip


def test_evaluate_over_a_journal(tmp_path: Path) -> None:
    """A journal of one account: a metric daily until five days ago, a failed delivery,
    one pending for an hour: each rule that holds once, the disks' rules off."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    journal.migrate()
    try:
        account = journal.add_account("alice", "hash", created_at=NOW - timedelta(days=40))
        for back in range(5, 25):
            delivered = _deliver(journal, account, NOW - timedelta(days=back, hours=-1))
            day = (NOW - timedelta(days=back)).date().isoformat()
            journal.write_outcome(delivered.id, expected=ParseStatus.PENDING,
                                  status=ParseStatus.PARSED, uncovered=(), failure=None,
                                  points=[_point(day)])  # fmt: skip
        failed = _deliver(journal, account, NOW - timedelta(days=3))
        journal.write_outcome(failed.id, expected=ParseStatus.PENDING, status=ParseStatus.FAILED,
                              uncovered=(), failure="unreadable", points=[])  # fmt: skip
        _deliver(journal, account, NOW - timedelta(hours=1))
        settings = Settings(journal_url=f"sqlite:///{tmp_path}/j.db", watch_no_delivery_h=0.5)
        found = watch.evaluate(journal, settings, NOW, usage=lambda folder: None)
        assert [f.key for f in found] == [
            f"no_delivery:{account.id}",
            f"silent_metric:{account.id}:step_count",
            f"failed:{account.id}:unreadable",
            "backlog",
        ]
        text = "\n".join(f.text() for f in found) + watch.check_text(found)
        assert "4321" not in text and "Secret Watch" not in text and "hash" not in text
        assert watch.check_text([]) == "OK"
        assert watch.check_text(found).splitlines()[0].startswith("no_delivery alice: ")
    finally:
        journal.close()


def test_a_stale_token_holds_after_its_refusals_within_the_window() -> None:
    retired = NOW - timedelta(days=2)

    def token(refused: int, last_ago: timedelta) -> StaleToken:
        return StaleToken(retired, refused, NOW - timedelta(hours=30), NOW - last_ago)

    assert watch.stale_token(ALICE, [], NOW, 3) is None
    assert watch.stale_token(ALICE, [token(2, timedelta(minutes=1))], NOW, 3) is None  # few
    assert watch.stale_token(ALICE, [token(9, timedelta(hours=25))], NOW, 3) is None  # quiet
    assert watch.stale_token(ALICE, [token(9, timedelta(minutes=1))], NOW, 0) is None  # off
    found = watch.stale_token(ALICE, [token(3, timedelta(minutes=1))], NOW, 3)
    assert found is not None and found.key == "stale_token:a-1" and found.account == "alice"
    assert "3 requests refused" in found.line and "replaced 2026-11-30" in found.line
    assert "Authorization" in found.advice and "rotate" in found.advice


class _Killed(BaseException):
    """The evaluator's process dying between a claim and its send (SIGKILL's stand-in:
    nothing after it in the evaluation runs)."""


def test_a_claim_whose_evaluator_was_killed_is_told_later_never_lost(tmp_path: Path) -> None:
    """A notice claimed in the journal and never sent (the evaluator killed in between)
    is taken up again once its claim is old: told exactly once; so is its "recovered"."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    journal.migrate()
    try:
        journal.add_account("alice", "hash", created_at=NOW - timedelta(days=3))
        settings = Settings(
            journal_url=f"sqlite:///{tmp_path}/j.db",
            notify_urls="json://127.0.0.1:9/hook",
            watch_silent_days=0,
            watch_disk_free_percent=0,
        )
        told: list[str] = []

        def dies(target: watch.Target, title: str, body: str) -> bool:
            raise _Killed

        def takes(target: watch.Target, title: str, body: str) -> bool:
            told.append(title)
            return True

        with pytest.raises(_Killed):
            watch.Watcher(journal, settings, send=dies).run(NOW)
        (claim,) = journal.watch_notices()
        assert claim.state == "telling"
        # at once: another evaluator may still be sending it, so it is left alone
        watch.Watcher(journal, settings, send=takes).run(NOW + timedelta(seconds=60))
        assert told == []
        later = NOW + timedelta(seconds=watch.CLAIM_S + 1)
        watch.Watcher(journal, settings, send=takes).run(later)
        assert told == ["healthlog no_delivery alice"]
        assert [n.state for n in journal.watch_notices()] == ["told"]
        watch.Watcher(journal, settings, send=takes).run(later + timedelta(minutes=1))
        assert told == ["healthlog no_delivery alice"]  # told: never twice

        # a delivery: the rule stops holding; its "recovered" killed, then told later
        _deliver(journal, journal.accounts()[0], later + timedelta(minutes=2))
        recovery = later + timedelta(minutes=3)
        with pytest.raises(_Killed):
            watch.Watcher(journal, settings, send=dies).run(recovery)
        assert [n.state for n in journal.watch_notices()] == ["ending"]
        watch.Watcher(journal, settings, send=takes).run(recovery + timedelta(seconds=30))
        assert told == ["healthlog no_delivery alice"]
        watch.Watcher(journal, settings, send=takes).run(
            recovery + timedelta(seconds=watch.CLAIM_S + 1)
        )
        assert told == ["healthlog no_delivery alice", "healthlog no_delivery alice: recovered"]
        assert journal.watch_notices() == []
    finally:
        journal.close()
