"""An account as a new user has it (issue 21, item 3): two months of HAE deliveries,
then a year of history imported from the Health app's export, folded into a real journal.

Twenty metrics: nineteen with data every day and a weekly weigh-in. The phone has a
months-long break in its history (``BREAK``: nothing from it) and a recent 3-day gap
(``GAP``: nothing from the export nor from HAE), which coverage must report; HAE
delivered one day at a time from ``HAE_FROM`` on, before the import, and once after it
with one sample of heart rate that the watch wrote late (``LATE``). The export is made
by ``tests.export_gen`` and imported by the real importer; HAE's bodies are folded by
the real fold. ``python -m tests.coverage_data FOLDER`` builds it in FOLDER (journal.db,
archive/) for a dashboard to be run against it.
"""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta
from pathlib import Path

from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.port import Journal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import importer

from tests import export_gen
from tests.conftest import Phone, metrics_body

FIRST_DAY = date(2025, 12, 1)
LAST_DAY = date(2026, 11, 30)
#: seven months without any data from the phone
BREAK = (date(2026, 2, 1), date(2026, 8, 31))
#: the recent days nothing sent: the gap coverage must show
GAP = (date(2026, 11, 10), date(2026, 11, 12))
#: HAE's first day: it sent a day a delivery from here to LAST_DAY, before the import
HAE_FROM = date(2026, 10, 1)
#: after the import, HAE sends this heart rate sample that the watch wrote late
LATE = datetime(2026, 11, 29, 10, 30)
HAE_SOURCE = "Alice’s Apple Watch"

#: (the export's type, HAE's name, the unit both send, a value)
DAILY = [
    ("StepCount", "step_count", "count", 4000),
    ("DistanceWalkingRunning", "walking_running_distance", "km", 3.1),
    ("FlightsClimbed", "flights_climbed", "count", 4),
    ("ActiveEnergyBurned", "active_energy", "kcal", 220),
    ("BasalEnergyBurned", "basal_energy_burned", "kcal", 800),
    ("AppleExerciseTime", "apple_exercise_time", "min", 15),
    ("AppleStandTime", "apple_stand_time", "min", 30),
    ("TimeInDaylight", "time_in_daylight", "min", 40),
    ("HeartRate", "heart_rate", "count/min", 72),
    ("RestingHeartRate", "resting_heart_rate", "count/min", 55),
    ("WalkingHeartRateAverage", "walking_heart_rate_average", "count/min", 98),
    ("HeartRateVariabilitySDNN", "heart_rate_variability", "ms", 45),
    ("RespiratoryRate", "respiratory_rate", "count/min", 14),
    ("OxygenSaturation", "blood_oxygen_saturation", "%", 97),
    ("WalkingSpeed", "walking_speed", "km/hr", 4.8),
    ("WalkingStepLength", "walking_step_length", "cm", 70),
    ("StairAscentSpeed", "stair_speed_up", "m/s", 0.4),
    ("EnvironmentalAudioExposure", "environmental_audio_exposure", "dBASPL", 65),
    ("HeadphoneAudioExposure", "headphone_audio_exposure", "dBASPL", 70),
]
WEEKLY = ("BodyMass", "weight_body_mass", "kg", 70)
METRICS = sorted([name for _, name, _, _ in DAILY] + [WEEKLY[1]])


def phone_days() -> list[date]:
    """The days the phone has data for: every day but the break's and the gap's."""
    days, day = [], FIRST_DAY
    while day <= LAST_DAY:
        if not (BREAK[0] <= day <= BREAK[1] or GAP[0] <= day <= GAP[1]):
            days.append(day)
        day += timedelta(days=1)
    return days


def _weighed(day: date) -> bool:
    return day.weekday() == 0  # Mondays


def _export(folder: Path) -> Path:
    elements = []
    for day in phone_days():
        for kind, _, unit, value in [*DAILY, *([WEEKLY] if _weighed(day) else [])]:
            for hour in (8, 17):
                at = export_gen.stamp(datetime(day.year, day.month, day.day, hour, 5))
                record = export_gen.quantity(kind, str(value), at, at, unit=unit)
                elements.append(record)
    xml = export_gen.export_xml(elements)
    return export_gen.write_zip(folder / "export.zip", xml)


def _hae_day(day: date, late: tuple[str, datetime] | None = None) -> dict[str, object]:
    """A day of HAE's deliveries: each metric at 09:00 and 18:00, and a ``late`` sample."""
    metrics = []
    for _, name, unit, value in [*DAILY, *([WEEKLY] if _weighed(day) else [])]:
        points: list[dict[str, object]] = [
            {"date": f"{day} {hour:02d}:00:00 +0000", "qty": value, "source": HAE_SOURCE}
            for hour in (9, 18)
        ]
        if late is not None and late[0] == name:
            at = late[1]
            points.append({"date": f"{at:%Y-%m-%d %H:%M:%S} +0000", "qty": value,
                           "source": HAE_SOURCE})  # fmt: skip
        metrics.append((name, unit, points))
    return metrics_body(*metrics)


def _fold(journal: Journal, archive: Archive) -> None:
    report = FoldPass(journal, Player(journal, archive)).pass_once()
    assert report.tally.classes == {"parsed": report.selected}, report.tally.classes


def fold_account(journal: Journal, archive: Archive, folder: Path) -> Phone:
    """The account ``alice`` in ``journal`` (migrated): HAE, the import, HAE again."""
    token = tokens.new_token()
    account = journal.add_account("alice", tokens.hash_token(token))
    phone = Phone(journal, archive, account, token)
    for day in phone_days():
        if day >= HAE_FROM:
            phone.send(_hae_day(day))
    _fold(journal, archive)
    report = importer.import_export(
        _export(folder), journal=journal, archive=archive, settings=Settings(),
        account_id=account.id,
    )  # fmt: skip
    assert report.outcome is not None and report.status.value == "parsed", report.as_dict()
    # after the import (received now): HAE's next run re-sends its last day, and brings a
    # sample of the 29th the watch wrote late
    phone.clock = datetime.now(phone.clock.tzinfo) + timedelta(minutes=1)
    phone.send(_hae_day(LAST_DAY, ("heart_rate", LATE)))
    _fold(journal, archive)
    return phone


def build(where: Path) -> Phone:
    """The account folded into ``where``: a migrated journal.db and its archive/."""
    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    try:
        return fold_account(journal, LocalArchive(where / "archive"), where)
    finally:
        journal.close()


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    print(build(target).token)
