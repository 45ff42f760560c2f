"""One account, ten questions, every interface: the same answers (issue "One truth", 7).

Alice's week (2026-03-24 to 2026-03-30) comes two ways: her Watch through Health Auto
Export (a delivery), and all her devices through the Health app's export (``healthlog
import``). She travels: New York (-04:00) for two days, then Berlin, where the clocks go
from +01:00 to +02:00 on the 29th; her account's zone is Berlin's. Her iPhone and Watch
both count the steps of the 25th (two sources of one cumulative metric: the overlap rule
counts them once), the iPhone alone has a walk that crosses midnight on the 27th, and
two of the Watch's step samples start together on the 26th (distinct: both are kept);
the walk across midnight counts on each day its part (docs/time.md, "Days a sample
spans").
The step data has a gap (the 28th: nothing starts on it, though the walk's last 55
minutes are on it).

The ten questions, each asked for the week as dates without an offset (the phone's
days, docs/time.md): steps per day; heart rate's average, lowest and highest per day;
sleep per night; the workouts; the points of steps and of heart rate; the coverage's
gaps; the week's steps. Asked through ``healthlog export`` and ``coverage`` (the command
line), ``plot``'s data, the dashboard's API, the MCP tools and the MCP SQL views (the
SDK's client, ``healthlog mcp`` in a subprocess), and ``healthlog.reads``: every answer
equal, on SQLite and PostgreSQL. Where the samples say it plainly (the Watch's days,
the heart rate, the nights, the workouts, the samples sharing a start), the answers are
also what the samples say.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from healthlog import cli
from healthlog.archive.local import LocalArchive
from healthlog.cli import pictures as plot
from healthlog.config import Settings
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.ops import importer
from healthlog.reads import Reads, Resolution, ranges

from tests import export_gen
from tests.conftest import Phone, metrics_body
from tests.integration.asking import Ask, alices_journal, ask_mcp, open_journal, same, sql_days
from tests.integration.test_mcp import stack_env

WATCH = "Alice’s Watch"
PHONE = "Alice’s iPhone"
START, END = "2026-03-24", "2026-03-31"
#: the phone's offset on each day, the days either side of the week included
OFFSETS = {
    "2026-03-23": "-0400", "2026-03-24": "-0400", "2026-03-25": "-0400",
    "2026-03-26": "+0100", "2026-03-27": "+0100", "2026-03-28": "+0100",
    "2026-03-29": "+0200", "2026-03-30": "+0200", "2026-03-31": "+0200",
}  # fmt: skip
WEEK = [day for day in OFFSETS if START <= day < END]
#: the Watch's steps: (day, hh:mm, minutes, steps); none on the 28th (the gap)
WATCH_STEPS = [
    (day, hhmm, 10, 100 * n + k)
    for n, day in enumerate(WEEK)
    if day != "2026-03-28"
    for k, hhmm in enumerate(("00:20", "09:00", "13:00", "23:40"))
] + [
    ("2026-03-26", "12:00", 5, 7),  # two samples that start together: both count
    ("2026-03-26", "12:00", 10, 9),
    # just outside the week on the phone's clock, inside it in UTC or on the account's
    # zone: a read of the week on any clock but the phone's takes them in
    ("2026-03-23", "23:30", 10, 3000),
    ("2026-03-31", "00:30", 10, 5000),
]
#: the export's steps (source, day, hh:mm, minutes, steps), as a Health app's export holds
#: every device's: the Watch's of the 25th and 27th, the iPhone counting the same walks on
#: the 25th, and the iPhone alone on a walk across midnight on the 27th
EXPORTED = [
    *((WATCH, *s) for s in WATCH_STEPS if s[0] in ("2026-03-25", "2026-03-27")),
    *((PHONE, *s) for s in WATCH_STEPS if s[0] == "2026-03-25"),
    (PHONE, "2026-03-27", "23:55", 60, 61),  # after the Watch's last of the day
]
#: heart rate: (day, hh:mm, min, avg, max)
HEART = [
    (day, hhmm, 50 + n + k, 60 + n + 2 * k, 90 + n + 3 * k)
    for n, day in enumerate(WEEK)
    for k, hhmm in enumerate(("00:10", "08:00", "23:50"))
]
#: nights: (the day it ends on, from hh:mm the evening before, hours asleep)
NIGHTS = [(day, "23:00", 6.0 + n / 4) for n, day in enumerate(WEEK[1:])]
WORKOUTS = [("2026-03-24", "23:30", "Late walk"), ("2026-03-29", "07:00", "Sunday run")]


def at(day: str, hhmm: str, minutes: int = 0) -> str:
    """A time on the phone's clock of ``day``, ``minutes`` later, as HAE and the export
    write it (the offset the day's start has: the DST change is at 02:00)."""
    when = datetime.strptime(f"{day} {hhmm} {OFFSETS[day]}", "%Y-%m-%d %H:%M %z")
    return (when + timedelta(minutes=minutes)).strftime("%Y-%m-%d %H:%M:%S %z")


def day_before(day: str) -> str:
    return (datetime.fromisoformat(day) - timedelta(days=1)).date().isoformat()


# --- what the samples say ---------------------------------------------------------------------


def by_samples() -> dict[str, Any]:
    steps: dict[str, float] = defaultdict(float)
    for day, _, _, qty in WATCH_STEPS:  # the iPhone's 25th is the Watch's, counted once
        if day in WEEK:
            steps[day] += qty
    # the walk across midnight, 23:55 to 00:55: spread over the two days in proportion to
    # its time on each, as the Health app does (5 of its 60 minutes on the 27th)
    steps["2026-03-27"] += 61 * 5 / 60
    steps["2026-03-28"] += 61 * 55 / 60
    heart: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for day, _, low, avg, high in HEART:
        heart[day].append((low, avg, high))
    return {
        "steps per day": dict(steps),
        "heart rate average per day": {d: sum(v[1] for v in h) / len(h) for d, h in heart.items()},
        "heart rate lowest per day": {d: float(min(v[0] for v in h)) for d, h in heart.items()},
        "heart rate highest per day": {d: float(max(v[2] for v in h)) for d, h in heart.items()},
        "sleep per night": {day: hours for day, _, hours in NIGHTS},
        "workouts": sorted(name for _, _, name in WORKOUTS),
        "heart rate points": len(HEART),
        "week's steps": sum(steps.values()),
    }


# --- the store ----------------------------------------------------------------------------------


def hae_body() -> dict[str, Any]:
    body = metrics_body(
        ("step_count", "count", [
            {"date": at(d, t), "end": at(d, t, m), "qty": q, "source": WATCH}
            for d, t, m, q in WATCH_STEPS
        ]),
        ("heart_rate", "count/min", [
            {"date": at(d, t), "Min": lo, "Avg": avg, "Max": hi, "source": WATCH}
            for d, t, lo, avg, hi in HEART
        ]),
        ("sleep_analysis", "hr", [
            {"startDate": at(day_before(d), t), "endDate": at(d, t, int(h * 60) - 24 * 60),
             "qty": h, "value": "Core", "source": WATCH}
            for d, t, h in NIGHTS
        ]),
    )  # fmt: skip
    body["data"]["workouts"] = [
        {"id": f"w-{n}", "name": name, "start": at(d, t), "end": at(d, t, 40), "duration": 2400}
        for n, (d, t, name) in enumerate(WORKOUTS)
    ]
    return body


def export_file(where: Path) -> Path:
    elements = [
        export_gen.quantity("StepCount", str(q), at(d, t), at(d, t, m), source=who)
        for who, d, t, m, q in EXPORTED
    ]
    path = where / "export.xml"
    path.write_bytes(export_gen.export_xml(elements))
    return path


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A journal URL and the archive folder: alice's week, imported and delivered, folded."""
    where = tmp_path_factory.mktemp("consistency")
    with alices_journal(request.param, where, "Europe/Berlin") as (url, journal, account, token):
        archive = LocalArchive(where / "archive")
        settings = Settings.from_env({})
        report = importer.import_export(
            export_file(where), journal=journal, archive=archive, settings=settings,
            account_id=account.id,
        )  # fmt: skip
        assert report.status.value == "parsed", report
        Phone(journal, archive, account, token).send(hae_body())
        assert FoldPass(journal, Player(journal, archive)).pass_once().tally.classes == {
            "parsed": 1
        }
        journal.close()
        yield url, where


# --- each interface's answers -------------------------------------------------------------------

Answers = dict[str, Any]


def _per_day(rows: list[dict[str, Any]], metric: str) -> dict[str, float]:
    return {r["day"]: r[metric] for r in rows if r.get(metric) is not None}


def by_reads(url: str, where: Path) -> dict[str, Answers]:
    """``healthlog.reads``, and ``plot``'s data, for the week as their bounds read it."""
    journal = open_journal(url)
    try:
        (account,) = journal.accounts()
        r = Reads(journal, account)
        found = ranges.given(START, END, lambda: ranges.zone_named(account.time_zone))
        low, high = found.start, found.end
        days = r.daily(["step_count", "heart_rate"], start=low, end=high)
        hr = r.series("heart_rate", start=low, end=high, resolution=Resolution.DAY)
        (coverage,) = r.coverage(metric="step_count", start=low, end=high)
        week = r.series("step_count", start=low, end=high, resolution=Resolution.WEEK)
        drawn = plot.plot_metric(
            r, "step_count", where / "steps.svg", start=low, end=high, resolution=Resolution.DAY
        )
        raw = {
            m: r.series(m, start=low, end=high, resolution=Resolution.RAW).samples
            for m in ("step_count", "heart_rate")
        }
        return {
            "reads": {
                "steps per day": _per_day(days, "step_count"),
                "heart rate average per day": _per_day(days, "heart_rate"),
                "heart rate lowest per day": {s.t: s.min for s in hr.samples},
                "heart rate highest per day": {s.t: s.max for s in hr.samples},
                "sleep per night": {
                    n.night: round(n.asleep_h, 6) for n in r.sleep_nights(start=low, end=high)
                },
                "workouts": sorted(w.name or "" for w in r.workouts(start=low, end=high)),
                "step points": len(raw["step_count"]),
                "heart rate points": len(raw["heart_rate"]),
                "coverage gaps": [(g.first, g.last) for g in coverage.gaps],
                "week's steps": sum(s.value or 0 for s in week.samples),
            },
            "plot": {"week's steps": sum(drawn.values)},
        }
    finally:
        journal.close()


def by_cli(url: str, where: Path) -> Answers:
    runner = CliRunner()
    env = stack_env(url, where)
    bounds = ["--from", START, "--to", END, "--account", "alice"]

    def rows(*argv: str) -> list[dict[str, Any]]:
        done = runner.invoke(cli.cli, ["export", *argv, "--format", "jsonl", *bounds], env=env,
                             catch_exceptions=False)  # fmt: skip
        assert done.exit_code == 0, done.output
        return [json.loads(line) for line in done.stdout.splitlines()]

    def local_day(row: dict[str, Any]) -> str:
        start = datetime.fromisoformat(row["start"].replace("Z", "+00:00"))
        return (start + timedelta(minutes=row["utc_offset"])).date().isoformat()

    def by_days(row: dict[str, Any]) -> list[tuple[str, float]]:
        """What a person summing the export per day counts of a row: its counted value
        spread over the days of its phone's clock in proportion to its time on each."""
        value = float(row["counted"])
        if not row["end"] or row["end"] <= row["start"]:
            return [(local_day(row), value)]
        shift = timedelta(minutes=row["utc_offset"])
        start = datetime.fromisoformat(row["start"].replace("Z", "+00:00")) + shift
        end = datetime.fromisoformat(row["end"].replace("Z", "+00:00")) + shift
        parts, at = [], start
        while at < end:
            midnight = datetime.combine(at.date() + timedelta(days=1), datetime.min.time(),
                                        at.tzinfo)  # fmt: skip
            upto = min(midnight, end)
            parts.append((at.date().isoformat(), value * ((upto - at) / (end - start))))
            at = upto
        return parts

    steps: dict[str, float] = defaultdict(float)
    counted = rows("--metric", "step_count")
    for row in counted:
        for day, part in by_days(row):
            if START <= day < END:
                steps[day] += part
    heart: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    hr_rows = rows("--metric", "heart_rate")
    for row in hr_rows:
        heart[row["field"]][local_day(row)].append(float(row["qty"]))
    covered = runner.invoke(cli.cli, ["coverage", "--metric", "step_count", "--json", *bounds],
                            env=env, catch_exceptions=False)  # fmt: skip
    assert covered.exit_code == 0, covered.output
    (coverage,) = json.loads(covered.stdout)
    return {
        "steps per day": dict(steps),
        "heart rate average per day": {d: sum(v) / len(v) for d, v in heart["avg"].items()},
        "heart rate lowest per day": {d: min(v) for d, v in heart["min"].items()},
        "heart rate highest per day": {d: max(v) for d, v in heart["max"].items()},
        "workouts": sorted(r["name"] for r in rows("--section", "workouts")),
        "step points": len(counted),
        "heart rate points": len(heart["avg"]) and sum(len(v) for v in heart["avg"].values()),
        "coverage gaps": [(g["first"], g["last"]) for g in coverage["gaps"]],
        "week's steps": sum(steps.values()),
    }


def by_dashboard(url: str, where: Path) -> Answers:
    journal = open_journal(url)
    try:
        app = create_app(journal, LocalArchive(where / "archive"), DashboardOptions("alice"))
        client = app.test_client()
        q = {"start": START, "end": END}

        def get(path: str, **more: str) -> Any:
            reply = client.get(f"/api/{path}", query_string=q | more)
            assert reply.status_code == 200, reply.get_data(as_text=True)
            return reply.get_json()

        days = client.get(
            "/api/daily", query_string=[("metric", "step_count"), ("metric", "heart_rate"),
                                        *q.items()],
        ).get_json()["days"]  # fmt: skip
        hr = get("series", metric="heart_rate", resolution="day")["samples"]
        (coverage,) = get("coverage", metric="step_count")["metrics"]
        return {
            "steps per day": _per_day(days, "step_count"),
            "heart rate average per day": _per_day(days, "heart_rate"),
            "heart rate lowest per day": {s["t"]: s["min"] for s in hr},
            "heart rate highest per day": {s["t"]: s["max"] for s in hr},
            "sleep per night": {
                n["night"]: round(n["asleep_h"], 6) for n in get("sleep")["nights"]
            },
            "workouts": sorted(w["name"] for w in get("workouts")["workouts"]),
            "step points": len(get("series", metric="step_count", resolution="raw")["samples"]),
            "heart rate points": len(
                get("series", metric="heart_rate", resolution="raw")["samples"]
            ),
            "coverage gaps": [(g["first"], g["last"]) for g in coverage["gaps"]],
            "week's steps": sum(
                s["value"] or 0
                for s in get("series", metric="step_count", resolution="week")["samples"]
            ),
        }
    finally:
        journal.close()


def by_mcp(url: str, where: Path) -> dict[str, Answers]:
    """The MCP tools and the SQL views, through one ``healthlog mcp`` over stdio."""
    found: dict[str, Answers] = {}

    async def main(ok: Ask) -> None:
        q = {"start": START, "end": END}
        days = (await ok("daily_summary", metrics=["step_count", "heart_rate"], **q))["days"]
        hr = (await ok("metric_series", metric="heart_rate", resolution="day", **q))["buckets"]
        (coverage,) = (await ok("coverage", metric="step_count", **q))["metrics"]

        async def points(metric: str) -> int:
            raw = await ok("metric_series", metric=metric, resolution="raw", **q)
            return len(raw["points"])

        week = await ok("metric_series", metric="step_count", resolution="week", **q)
        found["mcp"] = {
            "steps per day": _per_day(days, "step_count"),
            "heart rate average per day": _per_day(days, "heart_rate"),
            "heart rate lowest per day": {b["start"]: b["min"] for b in hr},
            "heart rate highest per day": {b["start"]: b["max"] for b in hr},
            "sleep per night": {
                n["night"]: round(n["asleep_h"], 6)
                for n in (await ok("sleep_nights", **q))["nights"]
            },
            "workouts": sorted(w["name"] for w in (await ok("workouts", **q))["workouts"]),
            "step points": await points("step_count"),
            "heart rate points": await points("heart_rate"),
            "coverage gaps": [(g["first"], g["last"]) for g in coverage["gaps"]],
            "week's steps": sum(b["value"] or 0 for b in week["buckets"]),
        }
        # the SQL views, as docs/mcp.md tells an assistant to ask
        per = await sql_days(ok, START, END)
        extremes = await ok("sql", query=(
            "SELECT substr(local_start, 1, 10) AS day, field, min(qty), max(qty) "
            "FROM my_points WHERE metric = 'heart_rate' AND field IN ('min', 'max') "
            f"AND substr(local_start, 1, 10) >= '{START}' "
            f"AND substr(local_start, 1, 10) < '{END}' GROUP BY 1, 2"
        ))  # fmt: skip
        low = {d: lo for d, f, lo, _ in extremes["rows"] if f == "min"}
        high = {d: hi for d, f, _, hi in extremes["rows"] if f == "max"}
        found["mcp sql"] = {
            "steps per day": per.get("step_count", {}),
            "heart rate average per day": per.get("heart_rate", {}),
            "heart rate lowest per day": low,
            "heart rate highest per day": high,
            "week's steps": sum(per.get("step_count", {}).values()),
        }

    ask_mcp(url, where, main)
    return found


# --- the test -------------------------------------------------------------------------------------


def test_every_interface_gives_the_same_answers_and_the_samples_agree(
    store: tuple[str, Path],
) -> None:
    url, where = store
    answers: dict[str, Answers] = {
        **by_reads(url, where),
        "export/coverage": by_cli(url, where),
        "dashboard": by_dashboard(url, where),
        **by_mcp(url, where),
    }
    reference = answers["reads"]
    wrong: list[str] = []
    for interface, said in answers.items():
        for question, value in said.items():
            if not same(value, reference[question]):
                wrong.append(f"{interface} {question}: {value!r}; reads: {reference[question]!r}")
    for question, value in by_samples().items():
        if not same(reference[question], value):
            wrong.append(f"reads {question}: {reference[question]!r}; the samples: {value!r}")
    assert reference["coverage gaps"] == [("2026-03-28", "2026-03-28")], reference
    assert not wrong, json.dumps(wrong, indent=1, ensure_ascii=False)


def test_the_summary_says_what_the_export_sums(store: tuple[str, Path]) -> None:
    """The home page's cards on the week's last day (``until``: today there), the same
    through ``healthlog summary``: today's and
    the last 7 days' steps, heart rate and sleep, as a person summing ``healthlog export``
    the same way finds them (a total of the counted steps, an average of every heart-rate
    point) and as the samples say (issue "A dashboard a person opens every morning")."""
    url, where = store
    last = WEEK[-1]
    exported = by_cli(url, where)
    journal = open_journal(url)
    try:
        app = create_app(journal, LocalArchive(where / "archive"), DashboardOptions("alice"))
        reply = app.test_client().get("/api/summary", query_string={"until": last})
        assert reply.status_code == 200, reply.get_data(as_text=True)
        cards = {c["metric"]: c for c in reply.get_json()["cards"]}
    finally:
        journal.close()
    told = CliRunner().invoke(
        cli.cli, ["summary", "--until", last, "--account", "alice", "--json"],
        env=stack_env(url, where), catch_exceptions=False,
    )  # fmt: skip
    assert told.exit_code == 0, told.output
    assert {c["metric"]: c for c in json.loads(told.stdout)["cards"]} == cards
    steps, heart, sleep = cards["step_count"], cards["heart_rate"], cards["sleep_analysis"]
    week_heart = [avg for _, _, _, avg, _ in HEART]
    said = {
        "steps today": steps["today"],
        "steps in the last 7 days": steps["week"],
        "steps a day": steps["week_per_day"],
        "heart rate today": heart["today"],
        "heart rate in the last 7 days": heart["week"],
        "sleep last night": sleep["today"],
    }
    summed = {
        "steps today": exported["steps per day"][last],
        "steps in the last 7 days": exported["week's steps"],
        # the days with steps: the 28th has none starting on it, but the walk's end
        "steps a day": exported["week's steps"] / len(exported["steps per day"]),
        "heart rate today": exported["heart rate average per day"][last],
        "heart rate in the last 7 days": sum(week_heart) / len(week_heart),
        "sleep last night": dict((d, h) for d, _, h in NIGHTS)[last],
    }
    wrong = {k: (v, summed[k]) for k, v in said.items() if not same(v, summed[k])}
    assert not wrong, wrong
    assert same(steps["today"], by_samples()["steps per day"][last])
    assert [p["day"] for p in steps["spark"]][-1] == last and len(steps["spark"]) == 30
    assert steps["trend"] is None  # a week of data says nothing of a trend
