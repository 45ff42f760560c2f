"""The dashboard's ``/prometheus``: healthlog's state for a scraper (issue 22, item 4).

Over a real SQLite journal with two accounts, the text is read back with
prometheus_client's own parser: the deliveries per status, failures by class, each
account's last delivery's age and points, the backlog, the watch's rules that hold. On
loopback without sign-in it is every account's; with sign-in, the signed-in account's
alone (a 401 without a session) and nothing of the journal as a whole. No value, no
source name, no token in it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.sqlite import SqliteJournal
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Phone, metrics_body

SOURCE = "Alice’s Secret Watch"


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, str]:
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    archive = LocalArchive(tmp_path / "archive")
    alice_token = tokens.new_token()
    alice = journal.add_account("alice", tokens.hash_token(alice_token))
    journal.add_account("bob", tokens.hash_token(tokens.new_token()))
    phone = Phone(journal, archive, alice, alice_token)
    points = [{"date": "2026-03-01 08:00:00 +0100", "qty": 4321, "source": SOURCE}]
    phone.send(metrics_body(("step_count", "count", points)))
    phone.send(b'{"data": ')  # not JSON: failed, unreadable
    FoldPass(journal, Player(journal, archive)).pass_once()
    phone.clock += timedelta(days=1)
    phone.send(metrics_body(("step_count", "count", points)))  # left pending: the backlog
    journal.close()
    return tmp_path, alice_token


def scrape(client: FlaskClient) -> dict[str, list[tuple[dict[str, str], float]]]:
    reply = client.get("/prometheus")
    assert reply.status_code == 200, reply.get_data(as_text=True)
    assert reply.content_type.startswith("text/plain; version=0.0.4")
    text = reply.get_data(as_text=True)
    assert SOURCE not in text and "4321" not in text
    return {
        family.name: [(dict(s.labels), s.value) for s in family.samples]
        for family in text_string_to_metric_families(text)
    }


def app_for(where: Path, **options: object) -> FlaskClient:
    journal = SqliteJournal(str(where / "journal.db"))
    settings = replace(Settings.from_env({}), watch_silent_days=0, watch_disk_free_percent=0)
    opts = DashboardOptions(settings=settings, **options)  # type: ignore[arg-type]
    app = create_app(journal, LocalArchive(where / "archive"), opts)
    return app.test_client()


def test_on_loopback_every_account_and_the_journal_as_a_whole(two: tuple[Path, str]) -> None:
    where, _ = two
    found = scrape(app_for(where))
    deliveries = {(s["account"], s["status"]): v for s, v in found["healthlog_deliveries"]}
    assert deliveries[("alice", "parsed")] == 1
    assert deliveries[("alice", "failed")] == 1
    assert deliveries[("alice", "pending")] == 1
    assert deliveries[("bob", "parsed")] == 0
    assert found["healthlog_failed_deliveries"] == [
        ({"account": "alice", "failure": "unreadable"}, 1.0)
    ]
    (age,) = found["healthlog_last_delivery_age_seconds"]
    assert age[0] == {"account": "alice"} and age[1] > 86400  # the phone's clock is old
    assert dict((s["account"], v) for s, v in found["healthlog_showcase_points"]) == {
        "alice": 1.0,
        "bob": 0.0,
    }
    lag = {s["quantile"]: v for s, v in found["healthlog_fold_lag_seconds"]}
    assert set(lag) == {"0.5", "1"} and 0 <= lag["0.5"] <= lag["1"]  # bob has none folded
    assert found["healthlog_backlog"] == [({}, 1.0)]
    assert found["healthlog_backlog_oldest_age_seconds"][0][1] > 0
    rules = {(s["rule"], s["account"]): v for s, v in found["healthlog_watch_rule_holds"]}
    # the last delivery is months old, one failed, one waits: the rules that hold
    assert rules == {
        ("no_delivery", "alice"): 1,
        ("failed unreadable", "alice"): 1,
        ("backlog", ""): 1,
    }


def test_with_sign_in_only_the_signed_in_account(two: tuple[Path, str]) -> None:
    where, token = two
    client = app_for(where, require_sign_in=True)
    assert client.get("/prometheus").status_code == 401
    reply = client.post("/sign-in", data={"token": token})
    assert reply.status_code == 302
    found = scrape(client)
    accounts = {s["account"] for s, _ in found["healthlog_deliveries"]}
    assert accounts == {"alice"}
    assert "healthlog_backlog" not in found  # the journal's own: the operator's only
    rules = {(s["rule"], s["account"]) for s, _ in found["healthlog_watch_rule_holds"]}
    assert rules == {("no_delivery", "alice"), ("failed unreadable", "alice")}
