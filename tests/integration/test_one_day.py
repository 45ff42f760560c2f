"""One meaning of a day (docs/time.md), asked through every interface: a traveller.

Alice's phone records steps, heart rate, workouts and nights in Berlin (+01:00), then in
Tokyo (+09:00), then in New York across the change to summer time (-05:00 to -04:00 on
2026-03-08); her account's zone is New York's, which is none of the phone's clocks on
the first days. Each day is asked through ``healthlog export`` and ``coverage`` (their
command line), ``plot``'s data, the dashboard's API (Flask's client), the MCP tools (the
SDK's client, ``healthlog mcp`` in a subprocess) and ``healthlog.reads``: a day without
an offset, and the same day given as two instants with its offset. Every answer equals
what the samples say (the day each was recorded on, on its own clock), on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from healthlog import cli
from healthlog.archive.local import LocalArchive
from healthlog.cli import pictures as plot
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.reads import Reads, Resolution, ranges

from tests.conftest import Phone, metrics_body
from tests.integration.asking import Ask, alices_journal, ask_mcp, open_journal, same, sql_days
from tests.integration.test_mcp import stack_env

SOURCE = "Alice’s Watch"
#: (the time on the phone's clock with its offset, steps, heart rate): the steps are
#: powers of two, so a day's total says which samples it holds
SAMPLES = [
    ("2026-03-01 00:30:00 +0100", 1, 60),  # Berlin: still Feb 28 in UTC and New York
    ("2026-03-01 12:00:00 +0100", 2, 62),
    ("2026-03-01 23:30:00 +0100", 4, 64),
    ("2026-03-02 00:30:00 +0900", 8, 70),  # Tokyo: Mar 1 in UTC
    ("2026-03-02 08:00:00 +0900", 16, 72),
    ("2026-03-02 23:30:00 +0900", 32, 74),
    ("2026-03-03 00:30:00 +0900", 64, 76),  # Mar 2 in UTC
    ("2026-03-07 23:30:00 -0500", 128, 80),  # New York: Mar 8 in UTC
    ("2026-03-08 01:30:00 -0500", 256, 82),  # the clock goes 02:00 -> 03:00
    ("2026-03-08 03:30:00 -0400", 512, 84),
    ("2026-03-08 23:30:00 -0400", 1024, 86),  # Mar 9 in UTC
    ("2026-03-09 00:30:00 -0400", 2048, 88),
]
#: (name, start, end) on the phone's clock
WORKOUTS = [
    ("Tokyo walk", "2026-03-02 00:10:00 +0900", "2026-03-02 00:40:00 +0900"),
    ("Late run", "2026-03-08 23:00:00 -0400", "2026-03-08 23:40:00 -0400"),
    ("Berlin swim", "2026-03-01 23:20:00 +0100", "2026-03-01 23:50:00 +0100"),
]
#: segments (start, end, stage, hours) of two nights: Tokyo's, and New York's across DST
NIGHTS = [
    ("2026-03-01 23:00:00 +0900", "2026-03-02 06:00:00 +0900", "Core", 7.0),
    ("2026-03-07 23:00:00 -0500", "2026-03-08 01:00:00 -0500", "Core", 2.0),
    ("2026-03-08 01:00:00 -0500", "2026-03-08 03:30:00 -0400", "Deep", 1.5),
    ("2026-03-08 03:30:00 -0400", "2026-03-08 06:30:00 -0400", "REM", 3.0),
]
#: the days asked, each without an offset and as the instants of its phone's midnights
DAYS = {
    "2026-03-01": ("2026-03-01T00:00+01:00", "2026-03-02T00:00+01:00"),
    "2026-03-02": ("2026-03-02T00:00+09:00", "2026-03-03T00:00+09:00"),
    "2026-03-08": ("2026-03-08T00:00-05:00", "2026-03-09T00:00-04:00"),
}


def phone_day(text: str) -> str:
    return text[:10]


def instant(text: str) -> datetime:
    """A bound (ISO 8601) or a sample's time (HAE's) as an aware datetime."""
    if "T" in text:
        return datetime.fromisoformat(text)
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S %z")


def expected(day: str, start: str, end: str) -> dict[str, Any]:
    """What the samples say of [start, end): a day without an offset holds the samples
    recorded on it, each on its own clock; two instants hold the samples between them
    (each then on its own day). A night is in when its day (the one it ends on) is, or
    its day's midnight on the bounds' offset is between the instants."""
    if "+" in start or "-" in start[10:]:
        low, high = instant(start), instant(end)

        def inside(t: str) -> bool:
            return low <= instant(t) < high

        def night_in(label: str) -> bool:
            midnight = datetime.fromisoformat(f"{label}T00:00").replace(tzinfo=low.tzinfo)
            return low <= midnight < high
    else:

        def inside(t: str) -> bool:
            return phone_day(t) == day

        def night_in(label: str) -> bool:
            return label == day

    mine = [s for s in SAMPLES if inside(s[0])]
    daily: dict[str, dict[str, float]] = {}
    for d in sorted({phone_day(t) for t, _, _ in mine}):
        of_day = [s for s in mine if phone_day(s[0]) == d]
        daily[d] = {
            "step_count": float(sum(s[1] for s in of_day)),
            "heart_rate": sum(s[2] for s in of_day) / len(of_day),
        }
    return {
        "steps": float(sum(s[1] for s in mine)),
        "points": len(mine),
        "daily": daily,
        "workouts": sorted(w[0] for w in WORKOUTS if inside(w[1])),
        "asleep_h": sum(n[3] for n in NIGHTS if night_in(phone_day(n[1]))),
        "coverage": [day],  # whole days of the phone's clock, from start's to end's
    }


def by_day(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {r["day"]: {m: r[m] for m in ("step_count", "heart_rate")} for r in rows}


def body() -> dict[str, Any]:
    metrics = metrics_body(
        ("step_count", "count", [{"date": t, "qty": q, "source": SOURCE} for t, q, _ in SAMPLES]),
        (
            "heart_rate",
            "count/min",
            [{"date": t, "Min": b, "Avg": b, "Max": b, "source": SOURCE} for t, _, b in SAMPLES],
        ),
        (
            "sleep_analysis",
            "hr",
            [
                {"startDate": a, "endDate": b, "qty": h, "value": v, "source": SOURCE}
                for a, b, v, h in NIGHTS
            ],
        ),
    )
    metrics["data"]["workouts"] = [  # type: ignore[index]
        {"id": f"w-{n}", "name": name, "start": a, "end": b, "duration": 1800}
        for n, (name, a, b) in enumerate(WORKOUTS)
    ]
    return metrics


# --- the store -----------------------------------------------------------------------------


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A journal URL and the archive folder: alice's traveller data, folded."""
    where = tmp_path_factory.mktemp("one-day")
    with alices_journal(request.param, where, "America/New_York") as (url, journal, account, token):
        archive = LocalArchive(where / "archive")
        Phone(journal, archive, account, token).send(body())
        report = FoldPass(journal, Player(journal, archive)).pass_once()
        assert report.tally.classes == {"parsed": 1}
        journal.close()
        yield url, where


# --- each interface's answer ---------------------------------------------------------------

Answers = dict[str, dict[str, Any]]


def day_after(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def asked(day: str, with_offset: bool) -> tuple[str, str]:
    return DAYS[day] if with_offset else (day, day_after(day))


def by_cli(url: str, where: Path, start: str, end: str) -> dict[str, Any]:
    runner = CliRunner()
    env = stack_env(url, where)
    bounds = ["--from", start, "--to", end, "--account", "alice"]
    out = runner.invoke(cli.cli, ["export", "--metric", "step_count", "--format", "jsonl",
                                  *bounds], env=env, catch_exceptions=False)  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    workouts = runner.invoke(cli.cli, ["export", "--section", "workouts", "--format", "jsonl",
                                       *bounds], env=env, catch_exceptions=False)  # fmt: skip
    assert workouts.exit_code == 0, workouts.output
    covered = runner.invoke(cli.cli, ["coverage", "--metric", "step_count", "--json", *bounds],
                            env=env, catch_exceptions=False)  # fmt: skip
    assert covered.exit_code == 0, covered.output
    (coverage,) = json.loads(covered.stdout)
    return {
        "steps": sum(float(r["counted"]) for r in rows),
        "points": len(rows),
        "coverage": sorted(coverage["days"]),
        "workouts": sorted(json.loads(line)["name"] for line in workouts.stdout.splitlines()),
    }


def by_reads_and_plot(url: str, where: Path, start: str, end: str) -> Answers:
    """``healthlog.reads``, and ``plot``'s data for the bounds as its command line reads them."""
    journal = open_journal(url)
    try:
        (account,) = journal.accounts()
        r = Reads(journal, account)
        found = ranges.given(start, end, lambda: ranges.zone_named(account.time_zone))
        low, high = found.start, found.end
        series = r.series("step_count", start=low, end=high, resolution=Resolution.DAY)
        rows = r.daily(["step_count", "heart_rate"], start=low, end=high)
        raw = r.series("step_count", start=low, end=high, resolution=Resolution.RAW)
        drawn = plot.plot_metric(
            r, "step_count", where / "steps.svg", start=low, end=high, resolution=Resolution.DAY
        )
        nights = r.sleep_nights(start=low, end=high)
        return {
            "reads": {
                "steps": sum(s.value or 0 for s in series.samples),
                "points": len(raw.samples),
                "daily": by_day(rows),
                "workouts": sorted(w.name or "" for w in r.workouts(start=low, end=high)),
                "asleep_h": sum(n.asleep_h for n in nights),
                "coverage": sorted(
                    d for c in r.coverage(metric="step_count", start=low, end=high) for d in c.days
                ),
            },
            "plot": {"steps": sum(drawn.values)},
        }
    finally:
        journal.close()


def by_dashboard(url: str, where: Path, start: str, end: str) -> dict[str, Any]:
    journal = open_journal(url)
    try:
        options = DashboardOptions(account_name="alice")
        app = create_app(journal, LocalArchive(where / "archive"), options)
        client = app.test_client()
        q = {"start": start, "end": end}

        def get(path: str, **more: str) -> Any:
            reply = client.get(f"/api/{path}", query_string=q | more)
            assert reply.status_code == 200, reply.get_data(as_text=True)
            return reply.get_json()

        series = get("series", metric="step_count", resolution="day")
        raw = get("series", metric="step_count", resolution="raw")
        metrics = [("metric", "step_count"), ("metric", "heart_rate")]
        daily = client.get("/api/daily", query_string=[*metrics, *q.items()])
        (coverage,) = get("coverage", metric="step_count")["metrics"]
        return {
            "steps": sum(s["value"] or 0 for s in series["samples"]),
            "points": len(raw["samples"]),
            "daily": by_day(daily.get_json()["days"]),
            "workouts": sorted(w["name"] for w in get("workouts")["workouts"]),
            "asleep_h": sum(n["asleep_h"] for n in get("sleep")["nights"]),
            "coverage": sorted(coverage["days"]),
        }
    finally:
        journal.close()


def by_mcp(url: str, where: Path, questions: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Every question through one ``healthlog mcp`` over stdio."""
    answers: dict[str, Any] = {}

    async def main(ok: Ask) -> None:
        for key, start, end in questions:
            q = {"start": start, "end": end}
            series = await ok("metric_series", metric="step_count", resolution="day", **q)
            raw = await ok("metric_series", metric="step_count", resolution="raw", **q)
            daily = await ok("daily_summary", metrics=["step_count", "heart_rate"], **q)
            (coverage,) = (await ok("coverage", metric="step_count", **q))["metrics"]
            answers[key] = {
                "steps": sum(b["value"] or 0 for b in series["buckets"]),
                "points": len(raw["points"]),
                "daily": by_day(daily["days"]),
                "workouts": sorted(w["name"] for w in (await ok("workouts", **q))["workouts"]),
                "asleep_h": sum(n["asleep_h"] for n in (await ok("sleep_nights", **q))["nights"]),
                "coverage": sorted({coverage["first_day"], coverage["last_day"]})
                if coverage["days_with_data"] <= 2
                else coverage,
            }
            if start[10:]:  # SQL's days are the phone's days: asked by day alone
                continue
            # the MCP SQL views, as docs/mcp.md tells an assistant to ask
            per = await sql_days(ok, start, end)
            points = await ok("sql", query=(
                "SELECT count(*) FROM my_points WHERE metric = 'step_count' AND "
                f"substr(local_start, 1, 10) >= '{start}' AND "
                f"substr(local_start, 1, 10) < '{end}'"
            ))  # fmt: skip
            by_sql: dict[str, dict[str, float]] = defaultdict(dict)
            for metric, values in per.items():
                for day, value in values.items():
                    by_sql[day][metric] = value
            answers[f"{key} sql"] = {"daily": dict(by_sql), "points": points["rows"][0][0]}

    ask_mcp(url, where, main)
    return answers


# --- the test ------------------------------------------------------------------------------


def test_every_interface_gives_the_days_the_samples_were_recorded_on(
    store: tuple[str, Path],
) -> None:
    url, where = store
    questions = [
        (f"{day}{' with offsets' if with_offset else ''}", *asked(day, with_offset))
        for day in DAYS
        for with_offset in (False, True)
    ]
    mcp = by_mcp(url, where, questions)
    wrong: dict[str, list[str]] = defaultdict(list)
    for key, start, end in questions:
        want = expected(key[:10], start, end)
        answers: Answers = {
            "export/coverage": by_cli(url, where, start, end),
            **by_reads_and_plot(url, where, start, end),
            "dashboard": by_dashboard(url, where, start, end),
            "mcp": mcp[key],
        }
        if f"{key} sql" in mcp:
            answers["mcp sql"] = mcp[f"{key} sql"]
        for interface, said in answers.items():
            for name, value in said.items():
                if not same(value, want[name]):
                    wrong[key].append(f"{interface} {name}: {value!r}, the samples say "
                                      f"{want[name]!r}")  # fmt: skip
    assert not wrong, json.dumps(wrong, indent=1, ensure_ascii=False)


def test_the_days_in_utc_and_on_the_accounts_zone_are_other_days() -> None:
    """The data is a traveller's: read on UTC or the account's zone, each asked day holds
    other samples than on the phone's clock, so a read on one zone cannot pass."""
    for day in DAYS:
        on_phone = {q for t, q, _ in SAMPLES if phone_day(t) == day}
        for zone in (UTC, timezone(timedelta(hours=-5))):
            there = {
                q
                for t, q, _ in SAMPLES
                if datetime.strptime(t, "%Y-%m-%d %H:%M:%S %z").astimezone(zone).date()
                == date.fromisoformat(day)
            }
            assert there != on_phone, (day, zone)
