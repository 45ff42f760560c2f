"""``/api/records/<section>`` and ``/api/sleep`` over plain HTTP (Flask's test client) on
tests.records_data's journal: every field a section sent, by its label, the source by
its name; the nights' bedtime, wake time and 7-day average, the 7- and 30-day windows;
and the MCP tools saying the same as the API (the real server, in process)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from flask.testing import FlaskClient
from healthlog.archive.local import LocalArchive
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.journal.sqlite import SqliteJournal

from tests.records_data import ASLEEP_H, SPAN_H, Built, build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("records"))


@pytest.fixture
def client(built: Built) -> FlaskClient:
    journal = SqliteJournal(str(built.folder / "journal.db"))
    app = create_app(
        journal, LocalArchive(built.folder / "archive"), DashboardOptions(account_name="carol")
    )
    app.testing = True
    return app.test_client()


def get(client: FlaskClient, url: str, status: int = 200) -> dict[str, Any]:
    reply = client.get(url)
    assert reply.status_code == status, reply.get_data(as_text=True)
    data: dict[str, Any] = reply.get_json()
    return data


def by_field(record: dict[str, Any]) -> dict[str, Any]:
    return {f["field"]: f["value"] for f in record["fields"]}


def test_sections_are_named_for_people(client: FlaskClient) -> None:
    labels = {s["section"]: s["label"] for s in get(client, "/api/sections")["sections"]}
    assert labels["stateOfMind"] == "State of mind"
    assert labels["heartRateNotifications"] == "Heart-rate notifications"
    assert labels["food"] == "Food"  # the Health app's export's own section


def test_state_of_mind_gives_its_lists_and_columns(client: FlaskClient) -> None:
    found = get(client, "/api/records/stateOfMind")
    assert found["label"] == "State of mind"
    assert [c["label"] for c in found["columns"]][:5] == [
        "Kind", "Valence", "Valence classification", "Labels", "Associations",
    ]  # fmt: skip
    labels = sorted(by_field(r)["labels"] for r in found["records"])
    assert labels == [["content", "grateful"], ["stressed"]]
    assert all(isinstance(by_field(r)["associations"], list) for r in found["records"])


def test_medications_give_their_status(client: FlaskClient) -> None:
    found = get(client, "/api/records/medications")["records"]
    assert sorted(by_field(r)["status"] for r in found) == ["Genommen", "Skipped"]
    assert {r["source_name"] for r in found} == {None}


def test_a_notification_names_its_source_and_lists_its_heart_rates(client: FlaskClient) -> None:
    bare = get(client, "/api/records/heartRateNotifications")["records"]
    assert all("heartRate" not in by_field(r) for r in bare)  # the series come with items=1
    found = get(client, "/api/records/heartRateNotifications?items=1")["records"]
    names = sorted(str(r["source_name"]) for r in found)
    assert names == ["Ada’s Apple Watch", "Apple Watch", "None"]
    assert not any(str(r["source_name"]).startswith(("{", ",")) for r in found)
    watch = next(r for r in found if r["source_name"] == "Apple Watch")
    assert by_field(watch)["heartRate"] == [124.0, 127.0]
    assert next(f for f in watch["fields"] if f["field"] == "threshold")["unit"] == "bpm"


def test_every_section_gives_a_label_and_a_value_for_every_field(client: FlaskClient) -> None:
    for s in get(client, "/api/sections")["sections"]:
        found = get(client, f"/api/records/{s['section']}?items=1")
        columns = {c["field"] for c in found["columns"]}
        for r in found["records"]:
            assert {f["field"] for f in r["fields"]} <= columns
            assert all(f["label"] for f in r["fields"])
            body = r["body"]
            shown = {f["field"] for f in r["fields"]}
            assert set(body) - shown <= {"start", "end", "source", "date"}, s["section"]


def test_the_ecg_the_symptom_and_the_heartbeats(client: FlaskClient) -> None:
    (ecg,) = get(client, "/api/records/ecg")["records"]
    assert by_field(ecg)["classification"] == "Sinusrhythmus"
    assert by_field(ecg)["averageHeartRate"] == 64
    symptoms = get(client, "/api/records/symptoms")["records"]
    assert {by_field(r)["severity"] for r in symptoms} == {"Leicht", "Not Present", "Moderate"}
    assert sorted(str(r["source_name"]) for r in symptoms) == ["Health", "Health", "None"]
    beats = get(client, "/api/records/heartbeatSeries?items=1")["records"]
    assert sorted(len(by_field(r)["heartbeat"]) for r in beats) == [2, 3]


def test_sleep_gives_bedtime_wake_time_the_7_day_average_and_the_windows(
    client: FlaskClient,
) -> None:
    found = get(client, "/api/sleep")
    week, month = found["windows"]
    assert (week["days"], week["nights"], week["first"], week["last"]) == (
        7, 5, "2026-09-01", "2026-09-07",
    )  # fmt: skip
    assert (week["bedtime"], week["bedtime_sd_min"]) == ("23:18", 40.7)
    assert (week["wake_time"], week["wake_time_sd_min"]) == ("06:48", 40.7)
    assert (week["asleep_h"], week["in_bed_h"]) == (ASLEEP_H, SPAN_H)
    assert (month["days"], month["nights"]) == (30, 6)
    nights = {n["night"]: n for n in found["nights"]}
    assert nights["2026-09-04"]["bedtime"] == "00:30"
    # the real 2023 body: in bed as sent, bedtime and wake time from sleepStart and sleepEnd
    real = nights["2023-01-31"]
    assert (real["bedtime"], real["wake_time"]) == ("00:24", "08:39")
    assert real["in_bed_h"] == pytest.approx(8.145011, abs=1e-4)
    assert all(n["asleep_7d_h"] == pytest.approx(ASLEEP_H) for n in found["nights"][-6:])
    ranged = get(client, "/api/sleep?start=2026-09-01&end=2026-09-08")
    assert ranged["windows"][0] == week and len(ranged["nights"]) == 5


@pytest.mark.slow  # seconds: an MCP server started through the SDK's client
def test_the_mcp_tools_say_what_the_api_says(built: Built, client: FlaskClient) -> None:
    pytest.importorskip("mcp")
    import anyio
    from healthlog.mcp import server as mcp_server
    from healthlog.reads import Reads
    from mcp import Client

    journal = SqliteJournal(str(built.folder / "journal.db"))
    r = Reads(journal, built.phone.account)
    guard = mcp_server.open_guard(r)
    answers: dict[str, Any] = {}

    async def main() -> None:
        async with Client(mcp_server.build(r, guard)) as mcp:
            for name, args in (
                ("sleep_nights", {"limit": 400}),
                ("records", {"section": "heartRateNotifications", "include_series": True}),
                ("records", {"section": "stateOfMind"}),
            ):
                result = await mcp.call_tool(name, args)
                assert not result.is_error, result
                answers[f"{name} {args.get('section', '')}"] = json.loads(
                    result.content[0].text  # type: ignore[union-attr]
                )

    try:
        anyio.run(main)
    finally:
        guard.close()
        journal.close()
    api_sleep = get(client, "/api/sleep")
    sleep = answers["sleep_nights "]
    assert sleep["windows"] == api_sleep["windows"]
    assert [
        (n["night"], n["bedtime"], n["wake_time"], n["asleep_7d_h"]) for n in sleep["nights"]
    ] == [(n["night"], n["bedtime"], n["wake_time"], n["asleep_7d_h"]) for n in api_sleep["nights"]]
    for section, items in (("heartRateNotifications", "?items=1"), ("stateOfMind", "")):
        api = get(client, f"/api/records/{section}{items}")["records"]
        mcp = answers[f"records {section}"]["records"]
        assert [(m["source_name"], m["fields"]) for m in mcp] == [
            (a["source_name"], a["fields"]) for a in api
        ]


def test_the_cli_export_names_sources_and_gives_the_fields(
    built: Built, client: FlaskClient, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``healthlog export --section``: the same ``source_name`` and body fields as the API
    (jsonl), the source name a column of the CSV."""
    from healthlog import cli

    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{built.folder}/journal.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{built.folder}/archive")
    monkeypatch.setenv("HEALTHLOG_LOG_LEVEL", "WARNING")
    section = "heartRateNotifications"
    assert cli.main(["export", "--section", section, "--format", "jsonl"]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    api = {r["identity"]: r for r in get(client, f"/api/records/{section}")["records"]}
    assert sorted(str(r["source_name"]) for r in exported) == [
        "Ada’s Apple Watch", "Apple Watch", "None",
    ]  # fmt: skip
    for r in exported:
        assert (r["source_name"], r["fields"]) == (
            api[r["identity"]]["source_name"],
            api[r["identity"]]["fields"],
        )
    assert cli.main(["export", "--section", section, "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(row["source_name"] for row in table) == ["", "Ada’s Apple Watch", "Apple Watch"]
