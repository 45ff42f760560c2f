"""The dashboard's API and pages over plain HTTP (Flask's test client), on folded data.

Each endpoint answers for the account in view; the security headers are on every
response; sign-in keeps each account to its own data; unknown names are readable 404s;
nothing is logged but route patterns.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from healthlog import log
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.dashboard.app import CSP
from healthlog.dashboard.sign_in import SESSION_COOKIE
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local.launcher import is_loopback

from tests.dashboard_data import (
    ALICE_SOURCE,
    BOB_SOURCE,
    BOB_STEPS,
    GAP,
    WORKOUT_ID,
    Folded,
    build,
)


@pytest.fixture(scope="module")
def folded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Folded, Path]]:
    where = tmp_path_factory.mktemp("dashboard")
    yield build(where), where


def make_app(where: Path, **options: object) -> Flask:
    journal = SqliteJournal(str(where / "journal.db"))
    app = create_app(journal, LocalArchive(where / "archive"), DashboardOptions(**options))  # type: ignore[arg-type]
    app.testing = True
    return app


@pytest.fixture
def alice(folded: tuple[Folded, Path]) -> FlaskClient:
    """A client of the dashboard fixed to alice's account, as `--account alice` does."""
    return make_app(folded[1], account_name="alice").test_client()


def get(client: FlaskClient, url: str, status: int = 200) -> dict[str, object]:
    reply = client.get(url)
    assert reply.status_code == status, reply.get_data(as_text=True)
    assert reply.is_json, reply.get_data(as_text=True)[:200]
    data: dict[str, object] = reply.get_json()
    return data


# --- every endpoint -------------------------------------------------------------------------


def test_status_says_which_rules_of_the_watch_hold(folded: tuple[Folded, Path]) -> None:
    where = folded[1]
    without = make_app(where, account_name="alice").test_client()
    assert get(without, "/api/status")["watch"] is None  # no settings: not judged
    settings = Settings(journal_url=f"sqlite:///{where}/journal.db")
    client = make_app(where, account_name="alice", settings=settings).test_client()
    found = get(client, "/api/status")["watch"]
    assert isinstance(found, list)
    rules = {(f["rule"], f["account"]) for f in found}
    assert ("failed unreadable", "alice") in rules and ("no_delivery", "alice") in rules
    assert all(f["account"] in ("alice", None) for f in found)  # never bob's
    assert all(f["advice"] for f in found)


def test_status_says_what_healthlog_status_says(alice: FlaskClient) -> None:
    s = get(alice, "/api/status")
    assert s["counts"] == {"pending": 0, "parsed": 6, "partial": 1, "failed": 1}
    assert s["backlog"] == 0 and s["oldest_pending_age_s"] is None
    assert s["failures"] == {"unreadable": 1}
    assert s["uncovered"] == {"tachograph": 1}
    assert s["records"] == {"ecg": 1, "stateOfMind": 2, "symptoms": 2, "workouts": 1}
    assert s["last_delivery"]


def test_catalog_lists_the_metrics_with_kind_unit_and_sources(alice: FlaskClient) -> None:
    metrics = get(alice, "/api/catalog")["metrics"]
    assert isinstance(metrics, list)
    steps = next(m for m in metrics if m["metric"] == "step_count")
    assert steps["kind"] == "cumulative" and steps["unit"] == "count"
    assert steps["sources"] == [ALICE_SOURCE]
    resting = next(m for m in metrics if m["metric"] == "resting_heart_rate")
    assert resting["kind"] == "discrete"


def test_series_sums_a_cumulative_metric_per_day(
    alice: FlaskClient, folded: tuple[Folded, Path]
) -> None:
    s = get(alice, "/api/series?metric=step_count")
    assert s["resolution"] == "day" and s["kind"] == "cumulative"
    samples = s["samples"]
    assert isinstance(samples, list)
    assert {p["t"]: p["value"] for p in samples} == folded[0].steps


def test_series_resolution_follows_the_range_or_is_chosen(alice: FlaskClient) -> None:
    day = get(alice, "/api/series?metric=step_count&start=2026-03-02&end=2026-03-03")
    assert day["resolution"] == "minute"  # a day's range: the finest buckets
    assert [p["count"] for p in day["samples"]] == [1, 1, 1]  # type: ignore[union-attr]
    raw = get(alice, "/api/series?metric=step_count&start=2026-03-02&end=2026-03-03&resolution=raw")
    assert {p["source"] for p in raw["samples"]} == {ALICE_SOURCE}  # type: ignore[union-attr]
    week = get(alice, "/api/series?metric=resting_heart_rate&resolution=week")
    assert all(p["min"] <= p["value"] <= p["max"] for p in week["samples"])  # type: ignore[union-attr]
    none = get(alice, "/api/series?metric=step_count&source=nobody")
    assert none["samples"] == []


def test_a_range_without_an_offset_is_the_phones_days(tmp_path: Path) -> None:
    """A day the coverage page links to, or a zoomed range, is read on the phone's clock
    (+10:00 here): 2024-09-21 holds its own 00:30 and 23:30, not the next morning's 09:30,
    which is on the same UTC day. A bound with an offset is that instant, as before."""
    from healthlog import tokens
    from healthlog.fold.pass_ import FoldPass
    from healthlog.fold.player import Player

    from tests.conftest import Phone, metrics_body

    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account("sydney", tokens.hash_token(token))
    phone = Phone(journal, LocalArchive(tmp_path / "archive"), account, token)
    steps = [("2024-09-21 00:30:00", 5), ("2024-09-21 23:30:00", 7), ("2024-09-22 09:30:00", 11)]
    phone.send(metrics_body(("step_count", "count", [
        {"date": f"{at} +1000", "qty": qty, "source": "Watch"} for at, qty in steps
    ])))  # fmt: skip
    FoldPass(journal, Player(journal, phone.archive)).pass_once()
    journal.close()
    client = make_app(tmp_path, account_name="sydney").test_client()

    day = "metric=step_count&start=2024-09-21&end=2024-09-22"
    raw = get(client, f"/api/series?{day}&resolution=raw")["samples"]
    assert [(p["t"], p["value"]) for p in raw] == [  # type: ignore[union-attr]
        ("2024-09-21T00:30:00+10:00", 5.0), ("2024-09-21T23:30:00+10:00", 7.0)
    ]  # fmt: skip
    minutes = get(client, f"/api/series?{day}")
    assert minutes["resolution"] == "minute"
    assert [p["t"] for p in minutes["samples"]] == ["2024-09-21T00:30", "2024-09-21T23:30"]  # type: ignore[union-attr]
    assert (minutes["start"], minutes["end"]) == ("2024-09-21T00:00:00", "2024-09-22T00:00:00")
    zoomed = get(
        client, "/api/series?metric=step_count&start=2024-09-21T23:00&end=2024-09-22T10:00"
    )
    assert [p["value"] for p in zoomed["samples"]] == [7.0, 11.0]  # type: ignore[union-attr]
    assert get(client, f"/api/daily?{day}")["days"] == [{"day": "2024-09-21", "step_count": 12.0}]
    # an instant's bounds: the UTC day 2024-09-21 holds 23:30 and the next morning's 09:30
    utc = "metric=step_count&start=2024-09-21T00:00Z&end=2024-09-22T00:00Z&resolution=raw"
    assert [p["value"] for p in get(client, f"/api/series?{utc}")["samples"]] == [7.0, 11.0]  # type: ignore[union-attr]


def test_series_refuses_bad_parameters_readably(alice: FlaskClient) -> None:
    assert "metric" in str(get(alice, "/api/series", 400)["error"])
    assert "resolution" in str(get(alice, "/api/series?metric=step_count&resolution=year", 400))
    assert "ISO 8601" in str(get(alice, "/api/series?metric=step_count&start=soon", 400))
    assert "is not before end" in str(
        get(alice, "/api/series?metric=step_count&start=2026-03-02&end=2026-03-01", 400)
    )
    said = str(get(alice, "/api/workouts?start=0001-01-01T00:00%2B14:00", 400))
    assert "start: " in said and "outside the calendar" in said
    err = get(alice, "/api/series?metric=step_cuont", 404)["error"]
    assert "step_count" in str(err)  # the nearest name


def test_daily_gives_a_row_a_day(alice: FlaskClient, folded: tuple[Folded, Path]) -> None:
    days = get(alice, "/api/daily?metric=step_count&metric=resting_heart_rate")["days"]
    assert isinstance(days, list)
    assert {d["day"]: d["step_count"] for d in days} == folded[0].steps
    get(alice, "/api/daily", 400)


def test_coverage_shows_the_gap_and_what_to_resend(alice: FlaskClient) -> None:
    metrics = get(alice, "/api/coverage?metric=step_count")["metrics"]
    assert isinstance(metrics, list) and len(metrics) == 1
    gaps = metrics[0]["gaps"]
    assert [(g["first"], g["last"], g["days"]) for g in gaps] == [
        (GAP[0].isoformat(), GAP[1].isoformat(), 3)
    ]
    assert "Manual Export" in gaps[0]["resend"] and GAP[0].isoformat() in gaps[0]["resend"]
    get(alice, "/api/coverage?metric=nope", 404)


def test_coverage_takes_a_range_or_the_days_up_to_the_last_day_with_data(
    alice: FlaskClient,
) -> None:
    """``days=N``: the N days ending on the account's last day with data (what the page
    opens on); ``days=all`` and no range: every day; ``start``/``end`` win over ``days``."""
    every = get(alice, "/api/coverage")
    last = max(m["last_day"] for m in every["metrics"])  # type: ignore[index, union-attr]
    assert every["last_data_day"] == last
    assert (every["first_day"], every["last_day"]) == (None, None)
    assert get(alice, "/api/coverage?days=all") == every
    steps = get(alice, "/api/coverage?metric=step_count&days=5")
    assert steps["last_day"] == last
    first = (date.fromisoformat(last) - timedelta(days=4)).isoformat()
    assert steps["first_day"] == first
    (found,) = steps["metrics"]  # type: ignore[misc]
    assert all(first <= day <= last for day in found["days"])
    # the gap is in the default range of the page, and the days before it too
    ninety = get(alice, "/api/coverage?metric=step_count&days=90")
    (found,) = ninety["metrics"]  # type: ignore[misc]
    assert [(g["first"], g["last"]) for g in found["gaps"]] == [
        (GAP[0].isoformat(), GAP[1].isoformat())
    ]
    # a range as every endpoint takes it: the days it reaches
    ranged = get(alice, "/api/coverage?metric=step_count&start=2026-03-02&end=2026-03-09&days=3")
    assert (ranged["first_day"], ranged["last_day"]) == ("2026-03-02", "2026-03-08")
    (found,) = ranged["metrics"]  # type: ignore[misc]
    assert sorted(found["days"]) == [f"2026-03-0{n}" for n in range(2, 9)]
    for bad, says in (("0", "days: between 1 and"), ("x", "days: not a whole number")):
        error = get(alice, f"/api/coverage?days={bad}", 400)
        assert says in str(error["error"])


def test_sleep_gives_stages_per_night(alice: FlaskClient) -> None:
    nights = get(alice, "/api/sleep")["nights"]
    assert isinstance(nights, list) and len(nights) == 20
    assert set(nights[0]["stages"]) == {"core", "deep", "rem", "awake"}
    assert nights[0]["asleep_h"] == pytest.approx(6.5)


def test_workouts_and_one_workout_with_route_and_heart_rate(alice: FlaskClient) -> None:
    listed = get(alice, "/api/workouts")["workouts"]
    assert [w["identity"] for w in listed] == [WORKOUT_ID]  # type: ignore[union-attr]
    w = get(alice, f"/api/workouts/{WORKOUT_ID}")
    assert len(w["route"]) == 120 and len(w["heart_rate"]) == 30  # type: ignore[arg-type]
    summary = w["route_summary"]
    assert isinstance(summary, dict)
    assert summary["points"] == 120 and 3000 < summary["distance_m"] < 10000
    assert str(w["start"]).endswith("+01:00")
    assert "no such workout" in str(get(alice, "/api/workouts/NOPE", 404)["error"])


def test_sections_and_records_with_the_ecg_trace(alice: FlaskClient) -> None:
    sections = get(alice, "/api/sections")["sections"]
    assert {s["section"] for s in sections} == {"ecg", "stateOfMind", "symptoms", "workouts"}  # type: ignore[union-attr]
    bare = get(alice, "/api/records/ecg")["records"]
    assert isinstance(bare, list) and "series" not in bare[0]
    ecg = get(alice, "/api/records/ecg?items=1")["records"]
    assert len(ecg[0]["series"]["voltage"]) == 1536  # type: ignore[index]
    assert len(get(alice, "/api/records/symptoms")["records"]) == 2  # type: ignore[arg-type]
    get(alice, "/api/records/medications", 404)


def test_deliveries_one_delivery_and_its_body(
    alice: FlaskClient, folded: tuple[Folded, Path]
) -> None:
    rows = get(alice, "/api/deliveries")["deliveries"]
    assert isinstance(rows, list) and len(rows) == 8
    assert rows[0]["received_at"] >= rows[-1]["received_at"]  # newest first
    failed = get(alice, "/api/deliveries?status=failed")["deliveries"]
    assert [d["id"] for d in failed] == [folded[0].failed_id]  # type: ignore[union-attr]
    get(alice, "/api/deliveries?status=odd", 400)
    get(alice, "/api/deliveries?limit=0", 400)
    by_id = {d["id"]: d for d in rows}
    assert sum(d["records"] for d in rows) == 6  # a workout, an ECG, 2 symptoms, 2 moods
    assert by_id[folded[0].delivery_ids[2]]["records"] == 1  # the workout's delivery
    one = get(alice, f"/api/deliveries/{folded[0].failed_id}")
    assert one["records"] == 0
    assert one["failure"] == "unreadable" and one["status"] == "failed"
    assert isinstance(one["headers"], dict)
    body = alice.get(str(one["body_url"]))
    assert body.status_code == 200
    assert body.data == b'{"data": not json}'
    # streamed from the archive's file (an import runs to gigabytes), its length known
    assert body.headers["Content-Length"] == str(len(body.data))
    assert body.headers["Content-Disposition"] == f'attachment; filename="{one["id"]}.json"'
    assert body.headers["X-Content-Type-Options"] == "nosniff"
    get(alice, "/api/deliveries/nope", 404)
    get(alice, "/api/deliveries/nope/body", 404)


def test_bobs_delivery_is_a_404_for_alice(alice: FlaskClient, folded: tuple[Folded, Path]) -> None:
    bobs = folded[0].bob_delivery_id
    assert bobs
    get(alice, f"/api/deliveries/{bobs}", 404)
    get(alice, f"/api/deliveries/{bobs}/body", 404)


# --- headers, errors, accounts ----------------------------------------------------------------


def test_every_response_has_the_csp_and_nosniff(alice: FlaskClient) -> None:
    urls = ["/", "/coverage", "/metrics", "/metrics/step_count", "/sleep", "/workouts",
            f"/workouts/{WORKOUT_ID}", "/records", "/deliveries", "/api/status",
            "/api/series?metric=nope", "/static/js/common.js", "/static/dashboard.css",
            "/static/vendor/plotly.min.js", "/nowhere", "/sign-in"]  # fmt: skip
    for url in urls:
        reply = alice.get(url)
        assert reply.headers["Content-Security-Policy"] == CSP, url
        assert reply.headers["X-Content-Type-Options"] == "nosniff", url
    assert "script-src 'self'" in CSP and "connect-src 'self'" in CSP
    assert "img-src 'self' data:" in CSP and "unsafe-inline" not in CSP


def test_plotly_is_served_from_the_installed_package(alice: FlaskClient) -> None:
    from importlib import resources

    reply = alice.get("/static/vendor/plotly.min.js")
    assert reply.status_code == 200 and reply.mimetype == "text/javascript"
    shipped = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    assert reply.data == shipped


def test_pages_carry_no_inline_script_and_no_other_host(alice: FlaskClient) -> None:
    for url in ["/", "/coverage", "/metrics/step_count", "/sleep", f"/workouts/{WORKOUT_ID}"]:
        html = alice.get(url).get_data(as_text=True)
        assert "<script>" not in html and "http://" not in html and "https://" not in html
        assert '<script src="/static/' in html


def test_unknown_pages_are_readable_404s_never_a_traceback(alice: FlaskClient) -> None:
    for url in ["/metrics/nope", "/workouts/nope", "/deliveries/nope", "/nowhere"]:
        reply = alice.get(url)
        assert reply.status_code == 404, url
        text = reply.get_data(as_text=True)
        assert reply.mimetype == "text/html" and "Traceback" not in text
    assert "nope" in alice.get("/metrics/nope").get_data(as_text=True)
    assert get(alice, "/api/nowhere", 404)["status"] == 404


def test_a_failure_is_a_500_with_the_type_logged_only(
    folded: tuple[Folded, Path], caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(folded[1], account_name="alice")

    class Broken:
        def __getattr__(self, name: str) -> object:
            raise RuntimeError(f"secret {ALICE_SOURCE}")

    app.extensions["healthlog"]["journal"] = Broken()
    with caplog.at_level(logging.DEBUG, logger="healthlog"):
        reply = app.test_client().get("/api/catalog")
    assert reply.status_code == 500
    assert ALICE_SOURCE not in reply.get_data(as_text=True)
    assert "Traceback" not in reply.get_data(as_text=True)
    assert ALICE_SOURCE not in caplog.text
    assert any(getattr(r, "error", None) == "RuntimeError" for r in caplog.records)


def test_several_accounts_need_a_choice(folded: tuple[Folded, Path]) -> None:
    client = make_app(folded[1]).test_client()
    session = get(client, "/api/session")
    assert session["account"] is None and session["accounts"] == ["alice", "bob"]
    assert "several accounts" in str(get(client, "/api/status", 400)["error"])
    bob = get(client, "/api/series?metric=step_count&account=bob")
    assert [p["value"] for p in bob["samples"]] == [BOB_STEPS]  # type: ignore[union-attr]
    get(client, "/api/status?account=carol", 404)


def test_an_account_fixed_by_name_cannot_be_switched(alice: FlaskClient) -> None:
    steps = get(alice, "/api/series?metric=step_count&account=bob&resolution=raw")
    assert BOB_SOURCE not in str(steps) and BOB_STEPS not in [
        p["value"]
        for p in steps["samples"]  # type: ignore[union-attr]
    ]
    assert get(alice, "/api/session")["accounts"] == ["alice"]


def test_every_link_of_a_page_keeps_the_account_in_view(folded: tuple[Folded, Path]) -> None:
    """With several accounts the one in view is ?account=: the navigation, the brand and
    an error page's way back keep it (before, the brand and error pages dropped it)."""
    client = make_app(folded[1]).test_client()
    for url, status in (("/coverage?account=bob", 200), ("/metrics/nothing?account=bob", 404)):
        page = client.get(url)
        assert page.status_code == status
        html = page.get_data(as_text=True)
        hrefs = re.findall(r'href="(/[^"]*)"', html)
        pages = [h for h in hrefs if not h.startswith("/static/")]
        assert pages and all(h.endswith("?account=bob") for h in pages), pages
    plain = client.get("/coverage").get_data(as_text=True)
    assert 'href="/coverage"' in plain and "?account=" not in plain


# --- sign-in ----------------------------------------------------------------------------------


def test_sign_in_shows_only_the_tokens_account(folded: tuple[Folded, Path]) -> None:
    data, where = folded
    client = make_app(where, require_sign_in=True).test_client()
    for url in ["/api/status", "/api/series?metric=step_count", "/api/session",
                f"/api/deliveries/{data.failed_id}/body"]:  # fmt: skip
        assert get(client, url, 401)["status"] == 401
    page = client.get("/coverage")
    assert page.status_code == 302 and page.headers["Location"].endswith("/sign-in")
    form = client.get("/sign-in")
    assert form.status_code == 200
    assert "<title>Sign in · healthlog</title>" in form.get_data(as_text=True)

    refused = client.post("/sign-in", data={"token": "hl_wrong"})
    assert refused.status_code == 401 and "hl_wrong" not in refused.get_data(as_text=True)
    assert "<title>Sign in · healthlog</title>" in refused.get_data(as_text=True)
    assert SESSION_COOKIE not in refused.headers.get("Set-Cookie", "")

    signed = client.post("/sign-in", data={"token": data.bob.token})
    assert signed.status_code == 302
    cookie = signed.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    assert data.bob.token not in cookie
    assert get(client, "/api/session")["account"] == {"id": data.bob.account.id, "name": "bob"}
    status = get(client, "/api/status?account=alice")  # ?account= does not switch
    assert status["points"] == 1
    get(client, f"/api/deliveries/{data.failed_id}", 404)  # alice's
    assert BOB_SOURCE in str(get(client, "/api/catalog"))

    out = client.post("/sign-out")
    assert out.status_code == 302
    get(client, "/api/status", 401)


def test_the_session_cookie_is_secure_over_tls_or_when_told(folded: tuple[Folded, Path]) -> None:
    data, where = folded
    tls = make_app(where, require_sign_in=True).test_client()
    reply = tls.post("/sign-in", data={"token": data.alice.token}, base_url="https://localhost")
    assert "Secure" in reply.headers["Set-Cookie"]
    told = make_app(where, require_sign_in=True, secure_cookies=True).test_client()
    reply = told.post("/sign-in", data={"token": data.alice.token})
    assert "Secure" in reply.headers["Set-Cookie"]


def test_a_forged_or_foreign_cookie_is_no_session(folded: tuple[Folded, Path]) -> None:
    data, where = folded
    one = make_app(where, require_sign_in=True).test_client()
    signed = one.post("/sign-in", data={"token": data.alice.token})
    value = signed.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    other = make_app(where, require_sign_in=True).test_client()  # another process's key
    other.set_cookie(SESSION_COOKIE, value)
    get(other, "/api/status", 401)
    other.set_cookie(SESSION_COOKIE, data.alice.account.id)
    get(other, "/api/status", 401)


def test_sign_in_with_a_fixed_account_refuses_the_others(folded: tuple[Folded, Path]) -> None:
    data, where = folded
    client = make_app(where, require_sign_in=True, account_name="alice").test_client()
    assert client.post("/sign-in", data={"token": data.bob.token}).status_code == 401
    assert client.post("/sign-in", data={"token": data.alice.token}).status_code == 302


def test_loopback_is_told_apart(folded: tuple[Folded, Path]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("")


def test_no_log_line_carries_a_value_a_source_or_a_token(
    folded: tuple[Folded, Path], caplog: pytest.LogCaptureFixture
) -> None:
    data, where = folded
    log.setup("DEBUG")
    client = make_app(where, require_sign_in=True).test_client()
    with caplog.at_level(logging.DEBUG, logger="healthlog"):
        client.post("/sign-in", data={"token": "hl_not_a_token"})
        client.post("/sign-in", data={"token": data.alice.token})
        client.get("/api/series?metric=step_count&source=" + ALICE_SOURCE)
        client.get("/api/records/ecg?items=1")
        client.get(f"/api/workouts/{WORKOUT_ID}")
    text = caplog.text + " ".join(str(r.__dict__) for r in caplog.records)
    for secret in (data.alice.token, "hl_not_a_token", ALICE_SOURCE, WORKOUT_ID, "step_count"):
        assert secret not in text
    assert any(getattr(r, "route", None) == "/api/series" for r in caplog.records)


# --- the command ------------------------------------------------------------------------------


def _run_dashboard(monkeypatch: pytest.MonkeyPatch, where: Path, *args: str) -> dict[str, Any]:
    from healthlog import cli
    from healthlog.dashboard import server

    seen: dict[str, Any] = {}

    def fake_serve(app: Flask, host: str, port: int, on_ready: Any = None) -> int:
        seen.update(options=app.extensions["healthlog"]["options"], host=host, port=port)
        return 0

    monkeypatch.setattr(server, "serve", fake_serve)
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{where}/journal.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{where}/archive")
    seen["code"] = cli.main(["dashboard", *args])
    return seen


def test_healthlog_dashboard_binds_loopback_and_signs_in_elsewhere(
    monkeypatch: pytest.MonkeyPatch, folded: tuple[Folded, Path]
) -> None:
    where = folded[1]
    local = _run_dashboard(monkeypatch, where)
    assert (local["code"], local["host"], local["port"]) == (0, "127.0.0.1", 8082)
    # the settings the command read go to the watch's rules (/prometheus)
    settings = local["options"].settings
    assert settings is not None and settings.journal_url == f"sqlite:///{where}/journal.db"
    assert local["options"] == DashboardOptions(settings=settings)
    wide = _run_dashboard(monkeypatch, where, "--host", "0.0.0.0", "--port", "9999")
    assert wide["options"].require_sign_in and wide["port"] == 9999
    told = _run_dashboard(monkeypatch, where, "--require-sign-in", "--account", "alice")
    assert told["options"] == DashboardOptions("alice", True, False, settings=settings)
    assert _run_dashboard(monkeypatch, where, "--account", "carol")["code"] == 2


def test_serve_takes_the_dashboard_flags() -> None:
    from healthlog import cli

    args = cli.serve.make_context("serve", []).params
    assert (args["dashboard_port"], args["dashboard_host"], args["no_dashboard"]) == (
        8082,
        "127.0.0.1",
        False,
    )
    args = cli.serve.make_context("serve", ["--no-dashboard", "--dashboard-port", "9"]).params
    assert args["no_dashboard"] and args["dashboard_port"] == 9


def test_without_sign_in_only_loopback_names_are_served(folded: tuple[Folded, Path]) -> None:
    """A page elsewhere cannot read it through a name pointed at 127.0.0.1 (DNS rebinding)."""
    client = make_app(folded[1], account_name="alice").test_client()
    for host in ("127.0.0.1:8082", "localhost:8082", "[::1]:8082", "localhost"):
        assert client.get("/api/status", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example:8082", "evil.example", "192.168.1.5:8082"):
        reply = client.get("/api/status", headers={"Host": host})
        assert reply.status_code == 421, host
        assert reply.headers["Content-Security-Policy"] == CSP
    signed = make_app(folded[1], require_sign_in=True).test_client()
    assert signed.get("/api/status", headers={"Host": "dash.example"}).status_code == 401


def test_a_metric_whose_name_holds_a_slash_has_its_page(tmp_path: Path) -> None:
    from healthlog import tokens
    from healthlog.fold.pass_ import FoldPass
    from healthlog.fold.player import Player

    from tests.conftest import Phone, metrics_body

    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account("alice", tokens.hash_token(token))
    archive = LocalArchive(tmp_path / "archive")
    points = [{"date": "2026-03-01 08:00:00 +0000", "qty": 97}]
    Phone(journal, archive, account, token).send(metrics_body(("blood/oxygen", "%", points)))
    FoldPass(journal, Player(journal, archive)).pass_once()
    journal.close()
    client = make_app(tmp_path, account_name="alice").test_client()
    page = client.get("/metrics/blood%2Foxygen")
    assert page.status_code == 200 and "blood/oxygen" in page.get_data(as_text=True)
    assert client.get("/metrics/blood%2Foxygenx").status_code == 404
    series = get(client, "/api/series?metric=blood%2Foxygen")
    assert [s["value"] for s in series["samples"]] == [97]  # type: ignore[union-attr]


def test_a_request_another_site_starts_is_refused_and_daily_is_capped(
    alice: FlaskClient,
) -> None:
    """A page of another site (an <img> at /api/series) gets a 403 unread; the
    dashboard's own pages (same-origin) and scripts (no marker) are served."""
    url = "/api/series?metric=step_count&resolution=minute&start=2026-03-02&end=2026-03-03"
    for site in ("cross-site", "same-site"):
        reply = alice.get(url, headers={"Sec-Fetch-Site": site})
        assert reply.status_code == 403, site
    assert alice.get(url, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    assert alice.get(url).status_code == 200
    many = "&".join(["metric=step_count"] * 13)
    assert "at most 12" in str(get(alice, f"/api/daily?{many}", 400)["error"])


def test_refused_sign_ins_are_logged_with_the_client_and_then_wait(
    folded: tuple[Folded, Path], caplog: pytest.LogCaptureFixture
) -> None:
    from healthlog.dashboard.sign_in import SIGN_IN_FAILURES

    data, where = folded
    client = make_app(where, require_sign_in=True).test_client()
    with caplog.at_level(logging.INFO, logger="healthlog.dashboard"):
        for _ in range(SIGN_IN_FAILURES):
            assert client.post("/sign-in", data={"token": "hl_guess"}).status_code == 401
        waits = client.post("/sign-in", data={"token": data.alice.token})  # even a right one
    assert waits.status_code == 429 and int(waits.headers["Retry-After"]) > 0
    assert "Too many refused sign-ins" in waits.get_data(as_text=True)
    refused = [r for r in caplog.records if r.getMessage() == "dashboard.sign_in_refused"]
    assert len(refused) == SIGN_IN_FAILURES
    assert all(getattr(r, "client", None) == "127.0.0.1" for r in refused)
    assert "hl_guess" not in caplog.text
    other = client.post(
        "/sign-in", data={"token": data.alice.token}, environ_base={"REMOTE_ADDR": "10.0.0.9"}
    )
    assert other.status_code == 302  # another address is not held up


def test_the_sign_in_wait_ends_with_its_window() -> None:
    from healthlog.dashboard.sign_in import SIGN_IN_FAILURES, SIGN_IN_WINDOW_S, SignInFailures

    now = [1000.0]
    failures = SignInFailures(clock=lambda: now[0])
    for _ in range(SIGN_IN_FAILURES):
        assert failures.wait_s("a") == 0
        failures.add("a")
    assert failures.wait_s("a") == SIGN_IN_WINDOW_S + 1
    now[0] += SIGN_IN_WINDOW_S
    assert failures.wait_s("a") == 0
    failures.add("a")
    failures.clear("a")
    assert failures.wait_s("a") == 0


# --- names for people ---------------------------------------------------------------------


def test_catalog_and_series_give_a_persons_names_beside_the_stored_ones(
    alice: FlaskClient,
) -> None:
    """``display_name``, ``display_metric``, ``display_unit`` (healthlog.reads.display) beside the
    stored ``metric``, ``field`` and ``unit``, which stay as they were (docs/dashboard.md)."""
    metrics = get(alice, "/api/catalog")["metrics"]
    assert isinstance(metrics, list)
    steps = next(m for m in metrics if m["metric"] == "step_count")
    assert (steps["field"], steps["unit"]) == ("qty", "count")
    assert (steps["display_name"], steps["display_metric"], steps["display_unit"]) == (
        "Steps",
        "Steps",
        "steps",
    )
    resting = next(m for m in metrics if m["metric"] == "resting_heart_rate")
    assert resting["unit"] == "count/min" and resting["display_unit"] == "bpm"
    assert resting["display_name"] == "Resting heart rate"

    s = get(alice, "/api/series?metric=resting_heart_rate")
    assert (s["metric"], s["unit"]) == ("resting_heart_rate", "count/min")
    assert (s["display_name"], s["display_unit"]) == ("Resting heart rate", "bpm")
    fields, stored = s["display_fields"], s["fields"]
    assert isinstance(fields, dict) and isinstance(stored, list) and set(fields) == set(stored)
    assert all(fields.values())
    steps_series = get(alice, "/api/series?metric=step_count")
    assert (steps_series["display_name"], steps_series["display_unit"]) == ("Steps", "steps")


def test_coverage_and_a_workout_name_the_metric_and_unit_for_people(alice: FlaskClient) -> None:
    metrics = get(alice, "/api/coverage?metric=step_count")["metrics"]
    assert isinstance(metrics, list)
    assert (metrics[0]["metric"], metrics[0]["display_name"]) == ("step_count", "Steps")
    heart = get(alice, f"/api/workouts/{WORKOUT_ID}")["heart_rate"]
    assert isinstance(heart, list) and heart
    assert {p["display_unit"] for p in heart} == {"bpm"}


def test_the_metric_pages_title_is_a_persons_name(alice: FlaskClient) -> None:
    page = alice.get("/metrics/step_count").get_data(as_text=True)
    assert "<title>Steps · healthlog</title>" in page
    assert 'data-metric="step_count"' in page  # the page still reads the stored name
