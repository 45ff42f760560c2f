"""A small synthetic data set folded into a real journal, for the dashboard's tests and docs.

Two accounts: alice (steps a day with a gap, resting heart rate, sleep with stages, a
workout with a route and heart rate, an ECG, symptoms, state of mind, a failed and a
partial delivery) and bob (steps whose value and source appear nowhere in alice's data).
``python -m tests.dashboard_data FOLDER`` builds it in FOLDER (journal.db, archive/) for
a dashboard to be run against it (docs/dashboard.md's screenshots).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.port import Journal
from healthlog.journal.sqlite import SqliteJournal

from tests.conftest import Phone, metrics_body

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hae"
FIRST_DAY = date(2026, 3, 1)
DAYS = 21
#: the days alice's phone sent no steps for: the gap the coverage page must show
GAP = (date(2026, 3, 9), date(2026, 3, 11))
ALICE_SOURCE = "Alice’s Watch"
BOB_SOURCE = "Bob’s Secret Phone"
BOB_STEPS = 987654.0
WORKOUT_ID = "0A1B2C3D-0000-4000-8000-00000000CAFE"


@dataclass
class Folded:
    alice: Phone
    bob: Phone
    #: alice's steps per local day (the sum of that day's points)
    steps: dict[str, float] = field(default_factory=dict)
    resting: dict[str, float] = field(default_factory=dict)
    delivery_ids: list[str] = field(default_factory=list)
    failed_id: str = ""
    bob_delivery_id: str = ""


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S +0100")


def _days() -> list[date]:
    return [
        FIRST_DAY + timedelta(days=n)
        for n in range(DAYS)
        if not GAP[0] <= FIRST_DAY + timedelta(days=n) <= GAP[1]
    ]


def _metrics(folded: Folded) -> dict[str, object]:
    steps, resting = [], []
    for n, day in enumerate(_days()):
        for hour, share in ((8, 0.3), (13, 0.45), (19, 0.25)):
            at = datetime(day.year, day.month, day.day, hour, 0)
            qty = round((6000 + 2500 * math.sin(n / 2.5)) * share)
            steps.append({"date": _stamp(at), "qty": qty, "source": ALICE_SOURCE})
            folded.steps[day.isoformat()] = folded.steps.get(day.isoformat(), 0) + qty
        bpm = 52 + (n % 5)
        at = datetime(day.year, day.month, day.day, 7, 30)
        resting.append({"date": _stamp(at), "qty": bpm, "source": ALICE_SOURCE})
        folded.resting[day.isoformat()] = bpm
    return metrics_body(
        ("step_count", "count", steps), ("resting_heart_rate", "count/min", resting)
    )


def _sleep() -> dict[str, object]:
    segments = []
    for n in range(DAYS - 1):
        day = FIRST_DAY + timedelta(days=n)
        at = datetime(day.year, day.month, day.day, 23, 0)
        for stage, hours in (
            ("Core", 1.5),
            ("Deep", 1.0 + (n % 3) * 0.2),
            ("REM", 1.2),
            ("Awake", 0.2),
            ("Core", 2.0),
            ("REM", 0.8),
        ):
            end = at + timedelta(hours=hours)
            segments.append(
                {
                    "startDate": _stamp(at),
                    "endDate": _stamp(end),
                    "qty": hours,
                    "value": stage,
                    "source": ALICE_SOURCE,
                }
            )
            at = end
    return metrics_body(("sleep_analysis", "hr", segments))


def _workout() -> dict[str, object]:
    start = datetime(2026, 3, 14, 9, 0)
    route, heart = [], []
    for i in range(120):
        angle = 2 * math.pi * i / 120
        route.append(
            {
                "latitude": 52.52 + 0.01 * math.sin(angle),
                "longitude": 13.40 + 0.016 * math.cos(angle) * (1 + 0.2 * math.sin(3 * angle)),
                "altitude": 40 + 8 * math.sin(2 * angle),
                "timestamp": _stamp(start + timedelta(seconds=15 * i)),
            }
        )
    for i in range(30):
        avg = 120 + 30 * math.sin(i / 6)
        heart.append(
            {
                "date": _stamp(start + timedelta(minutes=i)),
                "Min": avg - 5,
                "Avg": round(avg, 1),
                "Max": avg + 6,
                "units": "bpm",
                "source": ALICE_SOURCE,
            }
        )
    end = start + timedelta(minutes=30)
    workout = {
        "id": WORKOUT_ID,
        "name": "Outdoor Run",
        "start": _stamp(start),
        "end": _stamp(end),
        "duration": 1800,
        "location": "Outdoor",
        "isIndoor": False,
        "distance": {"qty": 5.2, "units": "km"},
        "heartRateData": heart,
        "route": route,
    }
    return {"data": {"workouts": [workout]}}


def _ecg() -> dict[str, object]:
    start = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
    voltages = []
    for i in range(1536):  # three seconds at 512 Hz
        beat = (i % 440) / 440
        spike = 900 * math.exp(-(((beat - 0.3) / 0.012) ** 2))
        wave = 120 * math.exp(-(((beat - 0.6) / 0.05) ** 2))
        voltages.append(
            {
                "date": start.timestamp() + i / 512,
                "voltage": round(spike + wave - 40, 2),
                "units": "mcV",
            }
        )
    ecg = {
        "start": "2026-03-12 10:00:00 +0000",
        "end": "2026-03-12 10:00:30 +0000",
        "classification": "Sinus Rhythm",
        "averageHeartRate": 68,
        "samplingFrequency": 512,
        "numberOfVoltageMeasurements": len(voltages),
        "source": ALICE_SOURCE,
        "voltageMeasurements": voltages,
    }
    return {"data": {"ecg": [ecg]}}


def fold_sample(journal: Journal, archive: Archive) -> Folded:
    """Alice's and Bob's deliveries, folded; what was folded, to compare pages against."""
    alice_token, bob_token = tokens.new_token(), tokens.new_token()
    alice = Phone(
        journal, archive, journal.add_account("alice", tokens.hash_token(alice_token)), alice_token
    )
    bob = Phone(
        journal, archive, journal.add_account("bob", tokens.hash_token(bob_token)), bob_token
    )
    folded = Folded(alice, bob)
    for body in (_metrics(folded), _sleep(), _workout(), _ecg()):
        folded.delivery_ids.append(alice.send(body))
    for name in ("symptoms.json", "state_of_mind.json"):
        folded.delivery_ids.append(alice.send((FIXTURES / name).read_bytes()))
    # a section healthlog does not know: the delivery is partial, the key uncovered
    folded.delivery_ids.append(alice.send({"data": {"metrics": [], "tachograph": [{"x": 1}]}}))
    folded.failed_id = alice.send(b'{"data": not json}')
    folded.delivery_ids.append(folded.failed_id)
    bob_points = [{"date": "2026-03-03 12:00:00 +0100", "qty": BOB_STEPS, "source": BOB_SOURCE}]
    folded.bob_delivery_id = bob.send(metrics_body(("step_count", "count", bob_points)))
    FoldPass(journal, Player(journal, archive)).pass_once()
    return folded


def build(where: Path) -> Folded:
    """The sample folded into ``where``: a migrated journal.db and its archive/."""
    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    try:
        return fold_sample(journal, LocalArchive(where / "archive"))
    finally:
        journal.close()


def main(folder: str) -> None:
    where = Path(folder)
    where.mkdir(parents=True, exist_ok=True)
    folded = build(where)
    print(json.dumps({"alice_token": folded.alice.token, "bob_token": folded.bob.token}))


if __name__ == "__main__":
    main(sys.argv[1])
