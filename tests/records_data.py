"""A journal holding a record of every section and sparse nights of sleep, for the tests of
the Records and Sleep pages (tests/unit/test_records_api.py,
tests/acceptance/test_records_pages.py).

One account, carol. Its deliveries:

* the section bodies in ``tests/fixtures/hae/`` (state of mind, medications, symptoms,
  cycle tracking, an ECG, heart-rate notifications in the shape the app really sends and
  in the wiki's, an HRV reading with its beats). No public body of these sections exists
  (tests/fixtures/hae/samples/SOURCES.md): those files are written from
  docs/hae-format.md, which cites the issue reports that show the real shapes;
* the real sleep bodies of ``tests/fixtures/hae/samples/`` (copied byte for byte from
  irvinlim/apple-health-ingester, see SOURCES.md there): nights of 2021 and 2023;
* sleep built here: a night a month in the first half of 2026, one on 2026-08-20 and five
  in the week ending 2026-09-07 (``WEEK``), so that nights are sparse over years and the
  7- and 30-day windows hold known nights;
* the Health app's export ``tests/fixtures/applehealth/export.xml`` (written by hand,
  see its README), imported: its symptom, cycle-tracking and heart-rate event records
  as that importer stores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import importer

from tests.conftest import Phone, metrics_body

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "hae"
SAMPLES = FIXTURES / "samples"
EXPORT = HERE / "fixtures" / "applehealth"
SOURCE = "Carol’s Watch"

#: the section bodies folded, in this order
SECTION_BODIES = (
    "state_of_mind.json",
    "medications.json",
    "symptoms.json",
    "cycle_tracking.json",
    "ecg.json",
    "heart_rate_notifications_observed.json",
    "heart_rate_notifications_documented.json",
    "metrics_hrv_heartbeat_series.json",
)
REAL_SLEEP = (
    "sleep_aggregated_pre-6.6.2_sleepSource-inBedSource_2021_irvinlim-test.json",
    "sleep_aggregated_v6.6.2-phases_pipe-joined-source_2023_irvinlim-test.json",
    "sleep_unaggregated_single-segment_2021_irvinlim-test.json",
)

#: a night's segments after its bedtime: (stage, hours); 7.25 h asleep, 7.5 h in all
SEGMENTS = (("Core", 2.0), ("Deep", 1.0), ("REM", 1.5), ("Awake", 0.25), ("Core", 2.75))
ASLEEP_H = 7.25
SPAN_H = 7.5
#: the nights of the last week (label -> bedtime in minutes from the label's midnight)
WEEK = {
    "2026-09-01": -60,
    "2026-09-02": -30,
    "2026-09-04": 30,
    "2026-09-05": -60,
    "2026-09-07": -90,
}
#: a night in the last 30 days but not the last 7
MONTH = {"2026-08-20": 60}
#: a night a month before that
SPARSE = {f"2026-0{m}-1{m}": -45 for m in range(1, 7)}
NIGHTS = SPARSE | MONTH | WEEK


@dataclass
class Built:
    phone: Phone
    folder: Path


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S +0100")


def built_sleep() -> dict[str, object]:
    """``NIGHTS`` as unaggregated segments on +0100, from ``SOURCE``."""
    segments = []
    for label, bedtime in NIGHTS.items():
        at = datetime.fromisoformat(label) + timedelta(minutes=bedtime)
        for stage, hours in SEGMENTS:
            end = at + timedelta(hours=hours)
            segments.append(
                {
                    "startDate": _stamp(at),
                    "endDate": _stamp(end),
                    "qty": hours,
                    "value": stage,
                    "source": SOURCE,
                }
            )
            at = end
    return metrics_body(("sleep_analysis", "hr", segments))


def build(where: Path) -> Built:
    """carol's deliveries folded into ``where`` (journal.db, archive/)."""
    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    archive = LocalArchive(where / "archive")
    try:
        token = tokens.new_token()
        account = journal.add_account("carol", tokens.hash_token(token))
        phone = Phone(journal, archive, account, token)
        for name in SECTION_BODIES:
            phone.send((FIXTURES / name).read_bytes())
        for name in REAL_SLEEP:
            phone.send((SAMPLES / name).read_bytes())
        phone.send(built_sleep())
        FoldPass(journal, Player(journal, archive)).pass_once()
        settings = Settings(journal_url=f"sqlite:///{where}/journal.db")
        importer.import_export(
            EXPORT / "export.xml",
            journal=journal,
            archive=archive,
            settings=settings,
            account_id=phone.account.id,
        )
        return Built(phone, where)
    finally:
        journal.close()
