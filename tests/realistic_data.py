"""A realistic account, for the dashboard's every-page tests and docs' screenshots.

Alice's year as a person starting with healthlog has it (issue "A dashboard a person
opens every morning", item 8): a year of history imported from the Health app's export
(steps, active energy, exercise minutes, resting heart rate, HRV, heart rate, weekly
weigh-ins; with a six-week break in its middle, the watch left in a drawer), then the
last two months through Health Auto Export, a delivery a day (the same metrics, stand
hours, sleep with stages, a run with its route and heart rate every third day), with a
recent three-day gap (the phone off on a trip), and every other section once, from the
real bodies in tests/fixtures/hae. The import is folded after the deliveries, as it
happens when a person imports after setting the app up. Her steps rose in the last
months (about 7 000 a day over the year, 9 000 lately): the summary's trend says so.

Times are relative to ``today`` (default: today in UTC), so that the summary opens on
today's data; the account's zone is Africa/Lagos (+01:00 all year, as the samples).

    .venv/bin/python -m tests.realistic_data FOLDER
"""

from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from healthlog import ids, tokens
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import importer

from tests import export_gen
from tests.conftest import Phone, metrics_body

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hae"
ZONE = "Africa/Lagos"
OFFSET = timedelta(hours=1)
WATCH = "Alice’s Apple Watch"
PHONE = "Alice’s iPhone"
#: the days of history imported, ending where HAE begins
IMPORTED_DAYS = 365
HAE_DAYS = 60
#: the imported days the watch lay in a drawer (days before HAE began)
DRAWER = range(150, 192)
#: the recent days nothing was sent (days before today)
TRIP = (20, 18)
#: the other sections, each once, from a real body (tests/fixtures/hae/README.md)
SECTION_BODIES = (
    "state_of_mind.json",
    "medications.json",
    "symptoms.json",
    "cycle_tracking.json",
    "ecg.json",
    "heart_rate_notifications_observed.json",
    "metrics_hrv_heartbeat_series.json",
    "workouts_v2_outdoor_run.json",
)


@dataclass
class Realistic:
    today: date
    account_id: str
    token: str
    first_hae_day: date
    trip: tuple[date, date]
    workout_ids: list[str] = field(default_factory=list)
    delivery_ids: list[str] = field(default_factory=list)


def _local(day: date, hour: float) -> datetime:
    return datetime(day.year, day.month, day.day) + timedelta(hours=hour)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S +0100")


def _steps_on(day: date, recent: bool, rng: random.Random) -> float:
    weekend = day.weekday() >= 5
    base = (9000 if recent else 7000) + (1500 if weekend else 0)
    return max(800.0, rng.gauss(base, 1800))


def _imported(today: date, first_hae: date, rng: random.Random) -> list[str]:
    """The export's records: a year of days before HAE began."""
    elements = []
    for back in range(IMPORTED_DAYS, 0, -1):
        if back in DRAWER:
            continue
        day = first_hae - timedelta(days=back)
        recent = (today - day).days <= 90
        total = _steps_on(day, recent, rng)

        def record(
            kind: str, value: float, hour: float, minutes: int, unit: str, day: date = day
        ) -> str:
            start = _local(day, hour) - OFFSET  # the export's stamps here are UTC
            return export_gen.quantity(
                kind,
                f"{value:.2f}",
                export_gen.stamp(start.replace(tzinfo=UTC)),
                export_gen.stamp((start + timedelta(minutes=minutes)).replace(tzinfo=UTC)),
                unit=unit,
                source=WATCH,
            )

        for hour, share in ((8, 0.2), (10, 0.15), (12.5, 0.2), (15, 0.1), (18, 0.25), (21, 0.1)):
            elements.append(record("StepCount", round(total * share), hour, 30, "count"))
        for hour in (9, 13, 17, 20):
            elements.append(record("ActiveEnergyBurned", rng.uniform(60, 160), hour, 60, "kcal"))
        elements.append(record("AppleExerciseTime", rng.uniform(10, 50), 18, 30, "min"))
        elements.append(record("RestingHeartRate", rng.gauss(58, 2), 7, 0, "count/min"))
        elements.append(record("HeartRateVariabilitySDNN", rng.gauss(45, 8), 6, 0, "ms"))
        for hour in range(0, 24, 2):
            elements.append(record("HeartRate", rng.gauss(70, 9), hour, 0, "count/min"))
        if day.weekday() == 6:
            elements.append(record("BodyMass", 72 - back / 200 + rng.gauss(0, 0.3), 7.5, 0, "kg"))
    return elements


def _day_body(day: date, rng: random.Random) -> dict[str, Any]:
    """What HAE sends for one day."""
    total = _steps_on(day, True, rng)
    steps, energy, stand, heart = [], [], [], []
    for hour in range(7, 22):
        at = _stamp(_local(day, hour))
        steps.append({"date": at, "qty": round(total / 15), "source": WATCH})
        energy.append({"date": at, "qty": round(rng.uniform(15, 45), 1), "source": WATCH})
        if hour < 19:
            stand.append({"date": at, "qty": 1, "source": WATCH})
    for hour in range(24):
        avg = rng.gauss(72 if 7 <= hour <= 22 else 58, 5)
        heart.append(
            {"date": _stamp(_local(day, hour)), "Min": round(avg - 9), "Avg": round(avg, 1),
             "Max": round(avg + 14), "source": WATCH}
        )  # fmt: skip
    metrics = [
        ("step_count", "count", steps),
        ("active_energy", "kcal", energy),
        ("apple_stand_hour", "count", stand),
        ("heart_rate", "count/min", heart),
        ("apple_exercise_time", "min",
         [{"date": _stamp(_local(day, 18)), "qty": round(rng.uniform(15, 55)), "source": WATCH}]),
        ("resting_heart_rate", "count/min",
         [{"date": _stamp(_local(day, 7)), "qty": round(rng.gauss(56, 2)), "source": WATCH}]),
        ("heart_rate_variability", "ms",
         [{"date": _stamp(_local(day, 6)), "qty": round(rng.gauss(48, 8), 1), "source": WATCH}]),
    ]  # fmt: skip
    if day.weekday() == 6:
        weighed = {"date": _stamp(_local(day, 7.5)), "qty": round(rng.gauss(71, 0.3), 1)}
        metrics.append(("weight_body_mass", "kg", [weighed | {"source": PHONE}]))
    metrics.append(("sleep_analysis", "hr", _night(day, rng)))
    body = metrics_body(*metrics)
    if day.toordinal() % 3 == 0:
        body["data"]["workouts"] = [_run(day, rng)]
    return body


def _night(day: date, rng: random.Random) -> list[dict[str, Any]]:
    """The night that ends on ``day``'s morning, as segments."""
    at = _local(day, -1 + rng.uniform(-0.7, 0.7))  # bedtime, about 23:00 the day before
    segments = []
    for stage, hours in (("Core", 1.4), ("Deep", 0.9), ("REM", 1.1), ("Awake", 0.15),
                         ("Core", 2.0), ("REM", 0.9), ("Core", 0.6)):  # fmt: skip
        hours *= rng.uniform(0.8, 1.2)
        end = at + timedelta(hours=hours)
        segments.append(
            {"startDate": _stamp(at), "endDate": _stamp(end), "qty": round(hours, 3),
             "value": stage, "source": WATCH}
        )  # fmt: skip
        at = end
    return segments


def _run(day: date, rng: random.Random) -> dict[str, Any]:
    """A morning run of about 5 km, with its route and heart rate (HAE's v2 shape)."""
    start = _local(day, 7 + rng.uniform(0, 1))
    minutes = rng.uniform(26, 34)
    fixes, route, heart = 240, [], []
    for i in range(fixes):
        angle = 2 * math.pi * i / fixes
        route.append(
            {
                "latitude": 6.45 + 0.006 * math.sin(angle),
                "longitude": 3.39 + 0.009 * math.cos(angle) * (1 + 0.2 * math.sin(3 * angle)),
                "altitude": 20 + 6 * math.sin(2 * angle),
                "timestamp": _stamp(start + timedelta(minutes=minutes * i / fixes)),
                "speed": 2.8,
            }
        )
    for i in range(int(minutes)):
        avg = 135 + 20 * math.sin(i / 7) + i * 0.5
        heart.append(
            {"date": _stamp(start + timedelta(minutes=i)), "Min": round(avg - 6),
             "Avg": round(avg, 1), "Max": round(avg + 7), "units": "bpm", "source": WATCH}
        )  # fmt: skip
    end = start + timedelta(minutes=minutes)
    return {
        "id": f"RUN-{day.isoformat()}",
        "name": "Outdoor Run",
        "start": _stamp(start),
        "end": _stamp(end),
        "duration": round(minutes * 60, 1),
        "location": "Outdoor",
        "isIndoor": False,
        "distance": {"qty": round(rng.uniform(4.6, 5.6), 2), "units": "km"},
        "activeEnergyBurned": {"qty": round(rng.uniform(300, 380)), "units": "kcal"},
        "elevationUp": {"qty": round(rng.uniform(20, 40)), "units": "m"},
        "avgHeartRate": {"qty": 145, "units": "bpm"},
        "heartRateData": heart,
        "route": route,
    }


def build(where: Path, today: date | None = None) -> Realistic:
    """Alice's account folded into ``where`` (journal.db and archive/)."""
    today = today or ids.now().date()
    rng = random.Random(2026)
    first_hae = today - timedelta(days=HAE_DAYS - 1)
    trip = (today - timedelta(days=TRIP[0]), today - timedelta(days=TRIP[1]))
    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    archive = LocalArchive(where / "archive")
    try:
        token = tokens.new_token()
        account = journal.add_account("alice", tokens.hash_token(token))
        journal.set_time_zone(account.id, ZONE)
        phone = Phone(journal, archive, account, token)
        found = Realistic(today, account.id, token, first_hae, trip)
        for n in range(HAE_DAYS):
            day = first_hae + timedelta(days=n)
            if trip[0] <= day <= trip[1]:
                continue
            # delivered in the evening, the day's data so far
            sent = (_local(day, 22) - OFFSET).replace(tzinfo=UTC)
            body = _day_body(day, rng)
            found.workout_ids += [w["id"] for w in body["data"].get("workouts", [])]
            found.delivery_ids.append(phone.send(body, at=min(sent, ids.now())))
        for name in SECTION_BODIES:
            found.delivery_ids.append(phone.send((FIXTURES / name).read_bytes()))
        FoldPass(journal, Player(journal, archive)).pass_once()
        export = where / "export.xml"
        export.write_bytes(export_gen.export_xml(_imported(today, first_hae, rng)))
        report = importer.import_export(
            export, journal=journal, archive=archive, settings=Settings.from_env({}),
            account_id=account.id,
        )  # fmt: skip
        assert report.status.value == "parsed", report
        export.unlink()
        return found
    finally:
        journal.close()


def main(folder: str) -> None:
    where = Path(folder)
    where.mkdir(parents=True, exist_ok=True)
    found = build(where)
    print(json.dumps({"alice_token": found.token, "today": found.today.isoformat()}))


if __name__ == "__main__":
    main(sys.argv[1])
