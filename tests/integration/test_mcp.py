"""``healthlog mcp`` through the SDK's own client: a real subprocess over stdio (and HTTP).

The journal holds tests.dashboard_data's sample (alice and bob) and alice's real HAE
walk with its route (tests/fixtures/hae/samples); each answer is compared with what
``healthlog export`` gives for the same data, run beforehand on the same journal.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local import launcher
from healthlog.model import Account
from mcp import Client, StdioServerParameters

from tests import pg
from tests.conftest import SAMPLES
from tests.dashboard_data import BOB_SOURCE, BOB_STEPS, GAP, WORKOUT_ID, Folded, fold_sample

#: the command line, as a desktop assistant would launch it
HEALTHLOG = (sys.executable, "-m", "healthlog.cli")
WALK = SAMPLES / "workouts_v1_walking_route-latlon_elevation_2021_irvinlim-test.json"
TOOLS = {
    "catalog",
    "metric_series",
    "daily_summary",
    "sleep_nights",
    "workouts",
    "workout",
    "records",
    "coverage",
    "sql",
}


@dataclass
class Sample:
    env: dict[str, str]
    folded: Folded
    db: Path | None  # the SQLite file, None on PostgreSQL


def _fold(journal: Journal, where: Path) -> Folded:
    journal.migrate()
    archive = LocalArchive(where / "archive")
    folded = fold_sample(journal, archive)
    folded.alice.send(WALK.read_bytes())
    FoldPass(journal, Player(journal, archive)).pass_once()
    journal.close()
    return folded


def stack_env(journal_url: str, where: Path) -> dict[str, str]:
    return launcher.clean_env(
        {
            "HEALTHLOG_JOURNAL_URL": journal_url,
            "HEALTHLOG_ARCHIVE_URL": f"file://{where / 'archive'}",
            "HEALTHLOG_LOG_LEVEL": "WARNING",
        }
    )


@pytest.fixture(scope="module")
def sqlite_sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    where = tmp_path_factory.mktemp("mcp")
    folded = _fold(SqliteJournal(str(where / "journal.db")), where)
    return Sample(
        stack_env(f"sqlite:///{where / 'journal.db'}", where), folded, where / "journal.db"
    )


@pytest.fixture(scope="module")
def postgres_sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sample]:
    with pg.fresh_database() as url:
        where = tmp_path_factory.mktemp("mcp-pg")
        folded = _fold(PostgresJournal(url), where)
        yield Sample(stack_env(url, where), folded, None)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sample(request: pytest.FixtureRequest) -> Sample:
    fixture: Sample = request.getfixturevalue(f"{request.param}_sample")
    return fixture


# --- talking to the server ---------------------------------------------------------------------


class Session:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, text
        assert result.structured_content == json.loads(text)
        data: dict[str, Any] = result.structured_content
        return data

    async def error(self, tool: str, **arguments: Any) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error, f"{tool} {arguments} answered without an error"
        text: str = result.content[0].text  # type: ignore[union-attr]
        assert "Traceback" not in text
        return text


def session(sample: Sample, work: Callable[[Session], Awaitable[None]], *flags: str) -> None:
    """Run ``work`` against ``healthlog mcp --account alice`` launched over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "healthlog.cli", "mcp", "--account", "alice", *flags],
        env=sample.env,
    )

    async def main() -> None:
        async with Client(params) as client:
            await work(Session(client))

    anyio.run(main)


def export(sample: Sample, *args: str) -> list[dict[str, Any]]:
    """``healthlog export ... --format jsonl --account alice``, as rows."""
    done = subprocess.run(
        [*HEALTHLOG, "export", *args, "--format", "jsonl", "--account", "alice"],
        env=sample.env,
        capture_output=True,
        check=True,
        text=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def local(start: str, offset: int | None) -> datetime:
    zone = timezone(timedelta(minutes=offset or 0))
    return datetime.fromisoformat(start.replace("Z", "+00:00")).astimezone(zone)


def same_instant(a: str, b: str) -> bool:
    return datetime.fromisoformat(a) == datetime.fromisoformat(b.replace("Z", "+00:00"))


# --- the tools ---------------------------------------------------------------------------------


def test_the_tool_list_and_its_schemas(sqlite_sample: Sample) -> None:
    async def work(s: Session) -> None:
        listed = {t.name: t for t in (await s.client.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.description and len(tool.description) > 40
            assert tool.annotations is not None and tool.annotations.read_only_hint is True
            assert tool.input_schema["type"] == "object"
        series = listed["metric_series"].input_schema
        assert series["required"] == ["metric"]
        assert set(series["properties"]) == {
            "metric", "start", "end", "resolution", "field", "source", "limit", "time_zone",
        }  # fmt: skip
        resolution = json.dumps(series["properties"]["resolution"])
        for name in ("raw", "hour", "day", "week", "month"):
            assert f'"{name}"' in resolution
        assert listed["daily_summary"].input_schema["required"] == ["metrics"]
        assert listed["workout"].input_schema["required"] == ["identity"]
        assert listed["records"].input_schema["required"] == ["section"]
        assert listed["sql"].input_schema["required"] == ["query"]
        sql_description = listed["sql"].description or ""
        for view in ("my_points", "my_records", "my_record_items", "my_deliveries"):
            assert view in sql_description
        assert "token" not in sql_description and "accounts" not in sql_description

    session(sqlite_sample, work)


def test_the_workout_tools_give_the_dashboards_figures(sample: Sample) -> None:
    """One read of a workout's figures, splits, zones and weekly totals: the MCP tools
    answer what the dashboard's API answers, in the account's units or those asked for."""
    from healthlog.dashboard import DashboardOptions, create_app

    url = sample.env["HEALTHLOG_JOURNAL_URL"]
    journal = SqliteJournal(str(sample.db)) if sample.db else PostgresJournal(url)
    where = Path(sample.env["HEALTHLOG_ARCHIVE_URL"].removeprefix("file://"))
    app = create_app(journal, LocalArchive(where), DashboardOptions(account_name="alice"))
    web = app.test_client()
    api_run = web.get(f"/api/workouts/{WORKOUT_ID}").get_json()
    api_mi = web.get(f"/api/workouts/{WORKOUT_ID}?units=imperial").get_json()
    api_list = web.get("/api/workouts").get_json()
    journal.close()
    assert api_run["figures"]["distance"]["value"] == 5.2 and api_run["splits"]

    async def work(s: Session) -> None:
        run = await s.ok("workout", identity=WORKOUT_ID)
        assert run["unit_system"] == "metric"
        for key in ("figures", "splits", "heart_rate_zones"):
            assert run[key] == api_run[key], key
        imperial = await s.ok("workout", identity=WORKOUT_ID, unit_system="imperial")
        assert imperial["figures"] == api_mi["figures"] and imperial["splits"] == api_mi["splits"]
        assert {sp["unit"] for sp in imperial["splits"]} == {"mi"}
        listed = await s.ok("workouts")
        assert listed["weeks"] == api_list["weeks"]
        assert {w["identity"]: w["figures"] for w in listed["workouts"]} == {
            w["identity"]: w["figures"] for w in api_list["workouts"]
        }
        said = await s.error("workout", identity=WORKOUT_ID, unit_system="nautical")
        assert "metric" in said and "imperial" in said

    session(sample, work)


def test_each_answer_equals_what_export_gives(sample: Sample) -> None:
    steps = export(sample, "--metric", "step_count")
    resting = export(sample, "--metric", "resting_heart_rate")
    sleep = export(sample, "--metric", "sleep_analysis")
    workouts = {w["identity"]: w for w in export(sample, "--section", "workouts")}
    ecg = export(sample, "--section", "ecg")
    assert steps and resting and sleep and len(workouts) == 2 and ecg

    steps_per_day: dict[str, float] = defaultdict(float)
    for p in steps:
        steps_per_day[local(p["start"], p["utc_offset"]).date().isoformat()] += p["qty"]
    resting_per_day = {
        local(p["start"], p["utc_offset"]).date().isoformat(): p["qty"] for p in resting
    }
    march = {d: v for d, v in steps_per_day.items() if d.startswith("2026-03")}

    async def work(s: Session) -> None:
        catalog = await s.ok("catalog")
        by_metric = {m["metric"]: m for m in catalog["metrics"]}
        step_field = by_metric["step_count"]["fields"][0]
        assert by_metric["step_count"]["kind"] == "cumulative"
        assert step_field["unit"] == steps[0]["unit"] == "count"
        assert same_instant(step_field["first"], min(p["start"] for p in steps))
        assert same_instant(step_field["last"], max(p["start"] for p in steps))
        assert BOB_SOURCE not in step_field["sources"]
        assert catalog["sections"]["workouts"] == 2 and catalog["sections"]["ecg"] == 1

        raw = await s.ok("metric_series", metric="step_count", resolution="raw", limit=2000)
        assert raw["unit"] == "count" and raw["truncated"] is False
        assert [(p["value"], p["source"]) for p in raw["points"]] == [
            (p["qty"], p["source"]) for p in steps
        ]
        for got, sent in zip(raw["points"], steps, strict=True):
            assert got["t"] == local(sent["start"], sent["utc_offset"]).isoformat()

        days = await s.ok(
            "metric_series", metric="step_count", resolution="day", start="2026-03-01",
            end="2026-04-01", time_zone="UTC",
        )  # fmt: skip
        assert (days["value_is"], days["unit"]) == ("sum", "count")
        assert {b["start"]: b["value"] for b in days["buckets"]} == march
        assert BOB_STEPS not in [b["value"] for b in days["buckets"]]

        daily = await s.ok(
            "daily_summary", metrics=["step_count", "resting_heart_rate"],
            start="2026-03-01", end="2026-04-01", time_zone="UTC",
        )  # fmt: skip
        assert daily["metrics"]["resting_heart_rate"]["unit"] == resting[0]["unit"]
        assert {d["day"]: d["step_count"] for d in daily["days"]} == march
        assert {d["day"]: d["resting_heart_rate"] for d in daily["days"]} == resting_per_day

        nights = (await s.ok("sleep_nights", limit=400))["nights"]
        stages: dict[str, float] = defaultdict(float)
        first = nights[0]
        for p in sleep:
            at = local(p["start"], p["utc_offset"])
            if (at + timedelta(hours=12)).date().isoformat() == first["night"]:
                stages[p["text"].lower()] += p["qty"]
        assert first["stages_h"] == pytest.approx(dict(stages))
        assert first["asleep_h"] == pytest.approx(sum(stages.values()) - stages["awake"])

        listed = (await s.ok("workouts"))["workouts"]
        assert {w["identity"] for w in listed} == set(workouts)
        for w in listed:
            sent = workouts[w["identity"]]
            assert same_instant(w["start"], sent["start"])
            assert w["name"] == sent["name"]

        walk_id = next(i for i in workouts if i != WORKOUT_ID)
        walk = await s.ok("workout", identity=walk_id, include_route=True, route_limit=2000)
        route = [i for i in workouts[walk_id]["items"] if i["series"] == "route"]
        assert [(f["lat"], f["lon"], f["alt_m"]) for f in walk["route"]] == [
            (i["lat"], i["lon"], i.get("alt")) for i in route
        ]
        assert all(same_instant(f["t"], i["t"]) for f, i in zip(walk["route"], route, strict=True))
        summary = walk["route_summary"]
        assert summary["points"] == len(route)
        assert summary["bbox"] == [
            min(i["lon"] for i in route), min(i["lat"] for i in route),
            max(i["lon"] for i in route), max(i["lat"] for i in route),
        ]  # fmt: skip
        assert sum(sp["distance_m"] for sp in walk["splits"]) == pytest.approx(
            summary["distance_m"], abs=1
        )
        run = await s.ok("workout", identity=WORKOUT_ID)
        beats = [i["qty"] for i in workouts[WORKOUT_ID]["items"] if i["series"] == "heartRateData"]
        heart = run["heart_rate"]
        assert (heart["samples"], heart["min"], heart["max"], heart["unit"]) == (
            len(beats),
            min(beats),
            max(beats),
            "count/min",
        )
        assert heart["avg"] == pytest.approx(sum(beats) / len(beats), abs=0.01)
        assert "route" not in run and run["route_summary"]["points"] == 120
        assert len(run["splits"]) >= 3  # a loop of about 3.6 km

        ecg_answer = (await s.ok("records", section="ecg"))["records"][0]
        assert ecg_answer["body"]["classification"] == ecg[0]["body"]["classification"]
        assert ecg_answer["body"]["averageHeartRate"] == ecg[0]["body"]["averageHeartRate"]
        assert "series" not in ecg_answer

        found = (await s.ok("coverage", metric="step_count"))["metrics"][0]
        assert found["days_with_data"] == len(steps_per_day)
        assert (
            found["gaps"] == [{"first": GAP[0].isoformat(), "last": GAP[1].isoformat(), "days": 3}]
            or found["daily"] is False
        )
        statuses = (await s.ok("coverage"))["deliveries"]["counts"]
        assert statuses["failed"] == 1 and statuses["partial"] == 1

        total = await s.ok(
            "sql", query="SELECT sum(qty) AS steps, count(*) AS n FROM my_points "
            "WHERE metric = 'step_count'",
        )  # fmt: skip
        assert total["columns"] == ["steps", "n"]
        assert total["rows"] == [[sum(p["qty"] for p in steps), len(steps)]]
        per_day = await s.ok(
            "sql", query="SELECT day, points FROM my_point_days WHERE metric = 'step_count' "
            "ORDER BY day",
        )  # fmt: skip
        counted: dict[str, int] = defaultdict(int)
        for p in steps:
            counted[local(p["start"], p["utc_offset"]).date().isoformat()] += 1
        assert per_day["rows"] == [[day, n] for day, n in sorted(counted.items())]

    session(sample, work)


def test_limits_cut_and_say_so(sqlite_sample: Sample) -> None:
    async def work(s: Session) -> None:
        raw = await s.ok("metric_series", metric="step_count", resolution="raw", limit=5)
        assert len(raw["points"]) == 5 and raw["truncated"] is True
        assert "start after" in raw["note"]
        nights = await s.ok("sleep_nights", limit=3)
        assert len(nights["nights"]) == 3 and nights["truncated"] is True
        assert "narrow" in nights["note"]
        rows = await s.ok("sql", query="SELECT metric, qty FROM my_points", limit=4)
        assert len(rows["rows"]) == 4 and rows["truncated"] is True and "GROUP BY" in rows["note"]
        walk = await s.ok("workout", identity=WORKOUT_ID, include_route=True, route_limit=10)
        assert len(walk["route"]) == 10 and walk["route_truncated"] is True
        ecg = await s.ok("sql", query="SELECT body || body || body AS big FROM my_records")
        assert "cells_cut" in ecg and max(len(r[0]) for r in ecg["rows"]) <= 501

        too_fine = await s.error(
            "metric_series", metric="step_count", resolution="minute", limit=20
        )
        assert "more than 20 buckets" in too_fine and "use day or coarser" in too_fine

    session(sqlite_sample, work)


def test_bad_arguments_name_the_problem(sqlite_sample: Sample) -> None:
    async def work(s: Session) -> None:
        assert "did you mean step_count" in await s.error("metric_series", metric="step_cont")
        reversed_range = await s.error(
            "metric_series", metric="step_count", start="2026-03-05", end="2026-03-01"
        )
        assert "start 2026-03-05 is not before end 2026-03-01" in reversed_range
        assert await s.error("metric_series", metric="step_count", resolution="year") == (
            "Error executing tool metric_series: resolution: one of raw, minute, hour, day, "
            "week or month (got 'year')"
        )
        assert "ISO 8601" in await s.error("sleep_nights", start="last tuesday")
        assert "did you mean ecg" in await s.error("records", section="ecgg")
        assert "no such workout" in await s.error("workout", identity="nope")
        assert "IANA" in await s.error("catalog", time_zone="Mars/Olympus")
        assert "between 1 and 2000" in await s.error("metric_series", metric="step_count", limit=0)

    session(sqlite_sample, work)


@contextmanager
def in_process(db: Path, env: dict[str, str], account: Account) -> Iterator[Any]:
    """The real server over ``db``'s journal for ``account``, built in this process (for
    the SDK's in-memory client), its journal and guard closed after the block."""
    from healthlog.mcp import server as mcp_server
    from healthlog.reads import Reads

    journal = SqliteJournal(str(db))
    r = Reads(journal, account)
    guard = mcp_server.open_guard(r)
    try:
        yield mcp_server.build(r, guard)
    finally:
        guard.close()
        journal.close()


def test_a_crash_inside_a_tool_stays_a_crash_even_from_a_validation_error(
    sqlite_sample: Sample,
) -> None:
    """Only the arguments' own check is said plainly: a tool whose body fails on a
    ValidationError (data it read, not an argument) is the SDK's crash, its values never
    in the reply. The real server, in process, with one more tool that fails so."""
    from pydantic import BaseModel

    class Reading(BaseModel):
        limit: int  # the name of an argument too: still not the arguments' check

    assert sqlite_sample.db is not None
    with in_process(
        sqlite_sample.db, sqlite_sample.env, sqlite_sample.folded.alice.account
    ) as server:

        @server.tool()  # type: ignore[untyped-decorator]
        def crashing(limit: int = 1) -> str:
            return str(Reading.model_validate({"limit": "resting 58 bpm, Alice's Apple Watch"}))

        async def main() -> None:
            async with Client(server) as client:
                crashed = await client.call_tool("crashing", {"limit": 3})
                text = crashed.content[0].text  # type: ignore[union-attr]
                assert crashed.is_error and "Alice" not in text and "58" not in text, text
                assert not text.startswith("Error executing tool crashing: limit:"), text
                refused = await client.call_tool("crashing", {"limit": "many"})
                said = refused.content[0].text  # type: ignore[union-attr]
                assert said.startswith("Error executing tool crashing: limit: a whole number")

        anyio.run(main)


def test_a_field_in_two_units_is_labelled_with_the_unit_its_values_are_in(
    tmp_path: Path,
) -> None:
    """Glucose in mg/dL for weeks, then in mmol/L: a range of the mmol/L days says mmol/L
    beside mmol/L values (never 5.5 "mg/dL"), and picks its resolution from them."""
    from healthlog import tokens
    from healthlog.archive.local import LocalArchive as Archive

    from tests.conftest import Phone, metrics_body

    db = tmp_path / "journal.db"
    journal = SqliteJournal(str(db))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account("alice", tokens.hash_token(token))
    phone = Phone(journal, Archive(tmp_path / "archive"), account, token)
    mg = [{"date": f"2026-02-{d:02d} 08:00:00 +0000", "qty": 100 + d} for d in range(1, 28)]
    mmol = [{"date": f"2026-03-05 {h:02d}:00:00 +0000", "qty": 5.5} for h in (7, 19)]
    phone.send(metrics_body(("blood_glucose", "mg/dL", mg)))
    phone.send(metrics_body(("blood_glucose", "mmol/L", mmol)))
    FoldPass(journal, Player(journal, phone.archive)).pass_once()
    journal.close()
    env = {"HEALTHLOG_JOURNAL_URL": f"sqlite:///{db}"}
    with in_process(db, env, account) as server:

        async def main() -> None:
            async with Client(server) as client:
                march = {"start": "2026-03-01", "end": "2026-04-01"}
                daily = await client.call_tool(
                    "daily_summary", {"metrics": ["blood_glucose"], **march}
                )
                data = daily.structured_content
                assert data is not None and not daily.is_error
                assert data["metrics"]["blood_glucose"]["unit"] == "mmol/L"
                assert data["days"] == [{"day": "2026-03-05", "blood_glucose": 5.5}]
                series = await client.call_tool(
                    "metric_series", {"metric": "blood_glucose", **march}
                )
                found = series.structured_content
                assert found is not None
                assert (found["unit"], found["resolution"]) == ("mmol/L", "hour")
                assert found["fields"] == ["qty"]  # one field, though stored in two units
                whole = await client.call_tool("daily_summary", {"metrics": ["blood_glucose"]})
                assert whole.structured_content is not None
                assert whole.structured_content["metrics"]["blood_glucose"]["unit"] == "mg/dL"

        anyio.run(main)


def test_arguments_of_the_wrong_kind_are_one_plain_sentence(sqlite_sample: Sample) -> None:
    """What the SDK's validation refuses is said like the tools' own refusals: the
    argument, what it takes, no pydantic text nor link."""

    async def work(s: Session) -> None:
        said = {
            ("metric_series", "resolution"): await s.error(
                "metric_series", metric="step_count", resolution="Day"
            ),
            ("metric_series", "metric"): await s.error("metric_series"),
            ("metric_series", "limit"): await s.error(
                "metric_series", metric="step_count", limit="many"
            ),
            ("daily_summary", "metrics"): await s.error("daily_summary", metrics=["a"] * 13),
            ("daily_summary", "metrics[0]"): await s.error("daily_summary", metrics=[7]),
            ("workout", "include_route"): await s.error(
                "workout", identity=WORKOUT_ID, include_route="maybe"
            ),
            ("sql", "timeout_s"): await s.error("sql", query="SELECT 1", timeout_s="soon"),
        }
        for (tool, argument), text in said.items():
            assert text.startswith(f"Error executing tool {tool}: {argument}: "), text
            for pydantic in ("pydantic", "validation error", "type=", "input_value", "\n"):
                assert pydantic not in text, text
        assert said[("metric_series", "resolution")].endswith(
            "one of raw, minute, hour, day, week or month (got 'Day')"
        )
        assert said[("metric_series", "metric")].endswith(
            "metric: required: a metric name from catalog, e.g. heart_rate"
        )
        limit = said[("metric_series", "limit")]
        assert "a whole number: most rows, 1 to 2000 (got 'many')" in limit
        assert "at most 12 items" in said[("daily_summary", "metrics")]
        assert "metrics[0]: text" in said[("daily_summary", "metrics[0]")]
        assert "true or false" in said[("workout", "include_route")]
        assert "a number: time limit, 0.1 to 30 seconds" in said[("sql", "timeout_s")]
        # the tools' other arguments from a list (a section, a metric) name the ones known
        assert "known: ecg, " in await s.error("records", section="ECG")

    session(sqlite_sample, work)


def test_the_sql_tool_refuses_what_is_not_one_read_of_this_account(sample: Sample) -> None:
    async def work(s: Session) -> None:
        refusals = {
            "DELETE FROM my_points": "SELECT only",
            "UPDATE my_points SET qty = 0": "SELECT only",
            "INSERT INTO my_points (qty) VALUES (1)": "SELECT only",
            "DROP VIEW my_points": "SELECT only",
            "ATTACH DATABASE '/tmp/x.db' AS x": "",
            "PRAGMA table_info(points)": "SELECT only",
            "SELECT 1; SELECT 2": "one statement only",
            "SELECT 1; DELETE FROM my_points": "one statement only",
            "SELECT * FROM accounts": "no table 'accounts'",
            "SELECT token_hash FROM accounts": "no table 'accounts'",
            "SELECT headers FROM deliveries": "no table 'deliveries'",
            "SELECT * FROM points WHERE source = 'x'": "no table 'points'",
            # the tables under the journal's points (a count alone would tell of others)
            "SELECT count(*) FROM point_rows": "no table 'point_rows'",
            "SELECT count(*) FROM series": "no table 'series'",
            "SELECT * FROM main.points": "without a schema",
            "SELECT * FROM public.points": "without a schema",
            "SELECT * FROM my_points UNION SELECT * FROM points": "no table 'points'",
            "SELECT (SELECT max(qty) FROM points) AS m": "no table 'points'",
            "SELECT * FROM (WITH accounts AS (SELECT 1) SELECT 1) s, accounts": "accounts",
            "WITH x AS (DELETE FROM my_points RETURNING *) SELECT * FROM x": "refused",
            "SELECT * INTO stolen FROM my_points": "refused",
        }
        if s_dialect == "postgres":
            refusals |= {
                "SELECT pg_read_file('/etc/passwd')": "not allowed",
                "SELECT set_config('statement_timeout', '0', false)": "not allowed",
                "SELECT query_to_xml('SELECT * FROM accounts', true, true, '')": "not allowed",
                "SELECT pg_sleep(60)": "not allowed",
                "SELECT * FROM pg_catalog.pg_authid": "without a schema",
            }
        for query, says in refusals.items():
            message = await s.error("sql", query=query)
            assert says in message, (query, message)
        rows = await s.ok("sql", query="SELECT DISTINCT source FROM my_points")
        assert [BOB_SOURCE] not in rows["rows"] and rows["rows"]
        bob = await s.ok("sql", query=f"SELECT count(*) FROM my_points WHERE qty = {BOB_STEPS}")
        assert bob["rows"] == [[0]]
        slow = await s.error(
            "sql",
            query="WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT count(*) FROM n",
            timeout_s=0.3,
        )
        assert "time limit" in slow

    s_dialect = "sqlite" if sample.db is not None else "postgres"
    session(sample, work)


def test_the_server_never_writes_to_the_journal(sqlite_sample: Sample) -> None:
    assert sqlite_sample.db is not None
    files = sorted(sqlite_sample.db.parent.glob("journal.db*"))

    def digest() -> dict[str, str]:
        return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.exists()}

    before = digest()

    async def work(s: Session) -> None:
        for tool, arguments in (
            ("catalog", {}),
            ("metric_series", {"metric": "step_count"}),
            ("daily_summary", {"metrics": ["step_count"]}),
            ("sleep_nights", {}),
            ("workouts", {}),
            ("workout", {"identity": WORKOUT_ID, "include_route": True}),
            ("records", {"section": "symptoms"}),
            ("coverage", {}),
            ("sql", {"query": "SELECT count(*) FROM my_record_items"}),
        ):
            await s.ok(tool, **arguments)
        await s.error("sql", query="DELETE FROM my_points")

    session(sqlite_sample, work)
    assert digest() == before


def test_streamable_http_listens_on_loopback_only(sqlite_sample: Sample) -> None:
    port = launcher.free_port()
    process = subprocess.Popen(
        [*HEALTHLOG, "mcp", "--account", "alice", "--http", "--port", str(port)],
        env=sqlite_sample.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        launcher.wait_listening(process, "127.0.0.1", port)
        listening = _listening_addresses(port)
        assert listening == {"127.0.0.1"}, listening

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS

        anyio.run(main)
    finally:
        launcher.stop(process)

    refused = subprocess.run(
        [*HEALTHLOG, "mcp", "--http", "--host", "0.0.0.0"],
        env=sqlite_sample.env,
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "loopback only" in refused.stderr


def test_a_taken_port_is_one_line_naming_port_and_exit_1(sqlite_sample: Sample) -> None:
    with socket.socket() as other:  # another program listening on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        done = subprocess.run(
            [*HEALTHLOG, "mcp", "--account", "alice", "--http", "--port", str(taken)],
            env=sqlite_sample.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"healthlog: port {taken} on 127.0.0.1 is taken (another healthlog serve, or "
        "another program, listens there): --port N picks another"
    ]  # no banner: nothing listens at the URL it would name
    assert done.stdout == ""


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on ``port`` (Linux /proc/net/tcp)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                local_address, state = line.split()[1], line.split()[3]
                address, hex_port = local_address.split(":")
                if state == "0A" and int(hex_port, 16) == port:
                    if len(address) == 8:
                        octets = bytes.fromhex(address)[::-1]
                        found.add(".".join(str(b) for b in octets))
                    else:
                        found.add(address)
    return found


@pytest.mark.parametrize("level", [None, "INFO", "DEBUG"])
def test_each_log_line_is_printed_once_as_json(sqlite_sample: Sample, level: str | None) -> None:
    env = {k: v for k, v in sqlite_sample.env.items() if k != "HEALTHLOG_LOG_LEVEL"}
    if level is not None:
        env["HEALTHLOG_LOG_LEVEL"] = level
    done = subprocess.run(
        [*HEALTHLOG, "mcp", "--account", "alice"],
        env=env,
        stdin=subprocess.DEVNULL,  # the client hangs up at once: the server stops
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["mcp.started", "mcp.stopped"]


def test_another_librarys_warning_is_still_printed_once_as_json() -> None:
    """The root handler that keeps the SDK's basicConfig from doubling healthlog's lines
    prints what other libraries warn of (asyncio here), instead of swallowing it."""
    script = (
        "import logging\n"
        "from healthlog import log\nfrom healthlog.mcp import server as mcp_server\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "log.setup('INFO')\n"
        "mcp_server._log_once()\n"
        "MCPServer('x', log_level='WARNING')  # its logging.basicConfig\n"
        "logging.getLogger('asyncio').warning('loop.slow')\n"
        "logging.getLogger('asyncio').info('loop.chatty')\n"
        "logging.getLogger('asyncio').error('Task exception was never retrieved\\n'\n"
        "    'future: <Task exception=ValueError(\"resting 58, Alice\")>')\n"
        "logging.getLogger('psycopg').warning('server said %s', 'Alice')\n"
        "logging.getLogger('healthlog.mcp').warning('ours')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(line["logger"], line["event"]) for line in lines] == [
        ("asyncio", "loop.slow"),
        ("asyncio", "Task exception was never retrieved"),  # its first line alone
        ("psycopg", "server said %s"),  # the text without what it quoted
        ("healthlog.mcp", "ours"),
    ]
    assert "Alice" not in done.stderr and "resting" not in done.stderr


def test_over_http_each_log_line_is_json_once_without_header_values(
    sqlite_sample: Sample, tmp_path: Path
) -> None:
    port = launcher.free_port()
    env = {**sqlite_sample.env, "HEALTHLOG_LOG_LEVEL": "DEBUG"}
    with (tmp_path / "stderr").open("w+") as stderr:
        process = subprocess.Popen(
            [*HEALTHLOG, "mcp", "--account", "alice", "--http", "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            launcher.wait_listening(process, "127.0.0.1", port)
            rebinding = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            rebinding.request("GET", "/mcp", headers={"Host": "rebound.example"})
            assert rebinding.getresponse().status == 421
            rebinding.close()
        finally:
            launcher.stop(process)
        stderr.seek(0)
        lines = stderr.read().splitlines()
    banner = f"healthlog MCP server (read-only) at  http://127.0.0.1:{port}/mcp"
    assert banner in lines
    logged = [json.loads(line) for line in lines if line != banner]
    assert [(e["logger"], e["event"]) for e in logged] == [
        ("healthlog.mcp", "mcp.started"),
        ("mcp.server.transport_security", "Invalid Host header"),  # not the header's value
    ]


def test_token_from_stdin_needs_http(sqlite_sample: Sample) -> None:
    done = subprocess.run(
        [*HEALTHLOG, "mcp", "--token", "-"],
        env=sqlite_sample.env,
        input=sqlite_sample.folded.alice.token + "\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "use --http" in done.stderr
    assert sqlite_sample.folded.alice.token not in done.stderr


def test_with_several_accounts_the_hint_offers_what_works_in_the_mode(
    sqlite_sample: Sample,
) -> None:
    stdio = subprocess.run(
        [*HEALTHLOG, "mcp"],  # alice and bob, none chosen
        env=sqlite_sample.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stdio.returncode == 2
    assert stdio.stderr.splitlines() == [
        "healthlog: this journal has several accounts: choose one with --account NAME"
    ]
    port = str(launcher.free_port())
    http = subprocess.run(
        [*HEALTHLOG, "mcp", "--http", "--port", port],
        env=sqlite_sample.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert http.returncode == 2 and "--account NAME or --token -" in http.stderr
    helped = subprocess.run(
        [*HEALTHLOG, "mcp", "--help"], capture_output=True, text=True, check=True, timeout=60
    )
    assert "with --http only" in " ".join(helped.stdout.split())


#: a query that runs until the SQL tool's time limit stops it, on either backend
ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000000) "
    "SELECT count(*) FROM c"
)


@pytest.mark.slow
def test_a_long_sql_query_does_not_hold_up_the_other_tools(sample: Sample) -> None:
    """The SQL tool's query runs in a session and a thread of its own: a catalog asked
    while it runs is answered before it ends (one request never blocks the others).
    The query runs for its whole time limit, so the catalog has all of it to answer in,
    on however loaded a machine."""

    async def work(s: Session) -> None:
        order: list[str] = []

        async def long_sql() -> None:
            result = await s.client.call_tool("sql", {"query": ENDLESS, "timeout_s": 8})
            assert result.is_error  # stopped at its time limit
            order.append("sql")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(long_sql)
            await anyio.wait_all_tasks_blocked()  # the sql request is sent and awaited
            listed = await s.ok("catalog")
            assert "step_count" in {m["metric"] for m in listed["metrics"]}
            order.append("catalog")
        assert order == ["catalog", "sql"]

    session(sample, work)


def test_a_heavy_tool_is_told_busy_when_every_slot_is_taken(sqlite_sample: Sample) -> None:
    """Two heavy reads at a time (healthlog.reads.heavy): a third heavy tool is an error that
    says the server is busy, a light one (catalog) is answered. The real server, in
    process, its gate's two slots held by reads at work."""
    assert sqlite_sample.db is not None
    with in_process(
        sqlite_sample.db, sqlite_sample.env, sqlite_sample.folded.alice.account
    ) as server:
        gate = server.heavy
        gate.wait_s = 0.05
        inside, leave = threading.Barrier(3), threading.Event()

        def hold() -> None:
            with gate.slot():
                inside.wait()
                leave.wait()

        holders = [threading.Thread(target=hold) for _ in range(gate.slots)]
        for holder in holders:
            holder.start()
        inside.wait()

        async def main() -> None:
            async with Client(server) as client:
                for tool, arguments in (
                    ("metric_series", {"metric": "step_count", "resolution": "day"}),
                    ("daily_summary", {"metrics": ["step_count"]}),
                    ("coverage", {}),
                    ("sql", {"query": "SELECT count(*) FROM my_points"}),
                ):
                    busy = await client.call_tool(tool, arguments)
                    text = busy.content[0].text  # type: ignore[union-attr]
                    assert busy.is_error and "busy" in text, (tool, text)
                light = await client.call_tool("catalog", {})
                assert not light.is_error

        try:
            anyio.run(main)
        finally:
            leave.set()
            for holder in holders:
                holder.join()
