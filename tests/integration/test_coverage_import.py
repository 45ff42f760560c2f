"""Coverage after an import (issue 21, item 3), on SQLite and PostgreSQL.

Two months of HAE deliveries, then a year of history imported from the Health app's
export through the real importer, then HAE again (``tests.coverage_data``): the recent
3-day gap is reported by the read model, ``/api/coverage`` and ``healthlog coverage``,
the seven months' break is not, and the only late sample is the one HAE brought late,
not the imported year.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli
from healthlog.archive.local import LocalArchive
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.reads import Reads

from tests import coverage_data, pg
from tests.conftest import Phone

GAP = (coverage_data.GAP[0].isoformat(), coverage_data.GAP[1].isoformat(), 3)
LATE_DAY = coverage_data.LATE.date().isoformat()
WEEKLY = coverage_data.WEEKLY[1]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def account(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Phone, str, Path]]:
    folder = tmp_path_factory.mktemp(f"coverage-{request.param}")
    with ExitStack() as resources:
        journal: Journal
        if request.param == "sqlite":
            url = f"sqlite:///{folder / 'journal.db'}"
            journal = SqliteJournal(str(folder / "journal.db"))
        else:
            url = resources.enter_context(pg.fresh_database())
            journal = PostgresJournal(url)
        resources.callback(journal.close)
        journal.migrate()
        phone = coverage_data.fold_account(journal, LocalArchive(folder / "archive"), folder)
        yield phone, url, folder


def test_the_read_model_shows_the_recent_gap_and_no_late_flood(
    account: tuple[Phone, str, Path],
) -> None:
    phone = account[0]
    found = {c.metric: c for c in Reads(phone.journal, phone.account).coverage()}
    assert sorted(found) == coverage_data.METRICS
    for metric, c in found.items():
        assert (c.first_day, c.last_day) == ("2025-12-01", "2026-11-30"), metric
        if metric == WEEKLY:
            assert (c.daily, c.gaps) == (False, []), metric  # weigh-ins: no gaps
        else:
            assert c.daily and [(g.first, g.last, g.days) for g in c.gaps] == [GAP], metric
    late = {metric: c.late for metric, c in found.items() if c.late}
    assert late == {"heart_rate": {LATE_DAY: 1}}  # HAE's one late sample, no import's


def test_the_api_shows_the_gap_and_no_late_flood(account: tuple[Phone, str, Path]) -> None:
    phone, _, folder = account
    app = create_app(
        phone.journal, LocalArchive(folder / "archive"), DashboardOptions(account_name="alice")
    )
    client = app.test_client()
    for query in ("", "?days=90", "?days=all", "?start=2026-11-01&end=2026-12-01"):
        reply = client.get("/api/coverage" + query)
        assert reply.status_code == 200, reply.get_data(as_text=True)
        metrics = {m["metric"]: m for m in reply.get_json()["metrics"]}
        assert len(metrics) == 20, query
        steps = metrics["step_count"]
        assert [(g["first"], g["last"], g["days"]) for g in steps["gaps"]] == [GAP], query
        assert "Manual Export" in steps["gaps"][0]["resend"]
        assert sum(m["late_points"] for m in metrics.values()) == 1, query
        assert metrics["heart_rate"]["late"] == {LATE_DAY: 1}, query
    ninety = client.get("/api/coverage?days=90").get_json()
    assert (ninety["first_day"], ninety["last_day"]) == ("2026-09-02", "2026-11-30")
    assert ninety["last_data_day"] == "2026-11-30"


def test_healthlog_coverage_shows_the_gap_and_no_late_flood(
    account: tuple[Phone, str, Path], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    _, url, folder = account
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", url)
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{folder}/archive")
    monkeypatch.setenv("HEALTHLOG_LOG_LEVEL", "WARNING")
    assert cli.main(["coverage"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:21]}
    assert sorted(rows) == coverage_data.METRICS
    # metric, first day, last day, days, span, gaps, late
    assert rows["step_count"][1:] == ["2025-12-01", "2026-11-30", "150", "365", "1", "0"]
    assert rows["heart_rate"][-1] == "1"
    assert rows[WEEKLY][-2:] == ["-", "0"]
    summary = "1 gap, 3 days; latest 2026-11-10 .. 2026-11-12 (3 days)"
    assert out.count(summary) == 19
    assert "Late points per day" not in out and len(out.splitlines()) < 60
    assert cli.main(["coverage", "--days"]) == 0
    each = capsys.readouterr().out
    assert f"heart_rate{' ' * 18}  {LATE_DAY}       1" in each
    assert each.count("2026-11-10 .. 2026-11-12") == 19
    assert cli.main(["coverage", "--json", "--metric", "step_count"]) == 0
    (steps,) = json.loads(capsys.readouterr().out)
    assert steps["gaps"] == [{"first": GAP[0], "last": GAP[1], "days": 3}]
    assert (steps["late_points"], steps["days_with_data"]) == (0, 150)
