"""Workouts folded into a real journal, for the tests of their figures, API and pages.

Two accounts: carol (metric, the default) and dave (imperial, ``healthlog account
set-units``). Each has the real HAE 8.1.2 walk of ``tests/fixtures/hae/samples``
(benmurrell/workouts-to-ical, SOURCES.md there: v1, a heart-rate series, a summary, no
route), and a v2 run made here with a route due north of 3.2 km in 20 minutes, a
heart-rate series, energy in kJ and the elevation in cm (as the Health app's export
writes it). carol also has a ride with a summary and no series, on the Sunday night
before the Monday of the run's ISO week, on the phone's clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.sqlite import SqliteJournal

from tests.conftest import SAMPLES, Phone

#: the real walk (v1, HAE 8.1.2): no id, so its identity is its name and UTC start
WALK_FILE = (
    SAMPLES
    / "workouts_v1_walking_hr-data-recovery_HAE-8.1.2_inner-data-object_workouts-to-ical.json"
)
WALK_ID = "Walking|2023-06-07T01:38:38.000000Z"
RUN_ID = "0A1B2C3D-0000-4000-8000-0000000F1605"
RIDE_ID = "0A1B2C3D-0000-4000-8000-0000000F1606"
#: the run's route: a fix every 10 s, 120 of them, 3.2 km due north from 48° N
RUN_START = datetime(2026, 3, 16, 7, 0)  # a Monday, +01:00
RUN_FIXES = 121
RUN_METRES = 3200.0
#: metres per degree of latitude (reads' mean Earth radius)
DEGREE_M = 6_371_008.8 * math.radians(1)
RUN_HEART = [120 + n for n in range(21)]  # a reading a minute, 120 to 140 bpm


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S +0100")


def run_body() -> dict[str, object]:
    step = RUN_METRES / (RUN_FIXES - 1) / DEGREE_M
    route = [
        {
            "latitude": 48.0 + n * step,
            "longitude": 11.0,
            "altitude": 500 + n * 0.1,
            "timestamp": _stamp(RUN_START + timedelta(seconds=10 * n)),
        }
        for n in range(RUN_FIXES)
    ]
    heart = [
        {"date": _stamp(RUN_START + timedelta(minutes=n)), "Min": bpm - 2, "Avg": bpm,
         "Max": bpm + 3, "units": "bpm", "source": "Carol's Watch"}
        for n, bpm in enumerate(RUN_HEART)
    ]  # fmt: skip
    return {
        "data": {
            "workouts": [
                {
                    "id": RUN_ID,
                    "name": "Outdoor Run",
                    "start": _stamp(RUN_START),
                    "end": _stamp(RUN_START + timedelta(minutes=20)),
                    "duration": 1200,
                    "location": "Outdoor",
                    "distance": {"qty": 3.2, "units": "km"},
                    "activeEnergyBurned": {"qty": 1046, "units": "kJ"},  # 250 kcal
                    "elevationUp": {"qty": 1200, "units": "cm"},  # 12 m
                    "heartRateData": heart,
                    "route": route,
                }
            ]
        }
    }


def ride_body() -> dict[str, object]:
    """A ride with a summary and no series, Sunday 23:30 on the phone's clock (+02:00)."""
    return {
        "data": {
            "workouts": [
                {
                    "id": RIDE_ID,
                    "name": "Outdoor Cycle",
                    "start": "2026-03-15 23:30:00 +0200",
                    "end": "2026-03-16 00:30:00 +0200",
                    "duration": 3600,
                    "distance": {"qty": 12.4274, "units": "mi"},  # 20 km
                    "activeEnergyBurned": {"qty": 500, "units": "kcal"},
                    "avgHeartRate": {"qty": 152, "units": "bpm"},
                    "heartRate": {"min": {"qty": 101, "units": "bpm"},
                                  "avg": {"qty": 152, "units": "bpm"},
                                  "max": {"qty": 181, "units": "count/min"}},
                }
            ]
        }
    }  # fmt: skip


@dataclass
class Folded:
    carol: Phone
    dave: Phone


def build(where: Path) -> Folded:
    """carol's and dave's workouts folded into ``where`` (journal.db, archive/)."""
    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    archive = LocalArchive(where / "archive")
    phones = []
    for name in ("carol", "dave"):
        token = tokens.new_token()
        account = journal.add_account(name, tokens.hash_token(token))
        phones.append(Phone(journal, archive, account, token))
    carol, dave = phones
    journal.set_unit_system(dave.account.id, "imperial")
    for phone in phones:
        phone.send(WALK_FILE.read_bytes())
        phone.send(run_body())
    carol.send(ride_body())
    FoldPass(journal, Player(journal, archive)).pass_once()
    journal.close()
    return Folded(carol, dave)
