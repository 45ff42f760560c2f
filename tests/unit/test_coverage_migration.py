"""The change that covers a section moves the ``partial`` rows naming it back to pending.

A delivery folded by the old parser (metrics only: its workouts were an uncovered key)
is written the way that parser wrote it, the journal is migrated to this version, the
row is ``pending`` again, and the next pass folds it to ``parsed``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import ParseStatus

from tests.conftest import SAMPLES, Phone

WORKOUT = "workouts_v1_walking_route-latlon_elevation_2021_irvinlim-test.json"
BEFORE_RECORDS = 3  # the schema the metrics-only parser ran on


def old_journal(tmp_path: Path) -> Phone:
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate(target=BEFORE_RECORDS)
    account = journal.add_account("alice", tokens.hash_token("t"))
    return Phone(journal, LocalArchive(tmp_path / "archive"), account, "t")


def fold_as_the_old_parser_did(phone: Phone, uncovered: tuple[str, ...]) -> str:
    delivery = phone.send((SAMPLES / WORKOUT).read_bytes())
    phone.journal.write_outcome(
        delivery,
        expected=ParseStatus.PENDING,
        status=ParseStatus.PARTIAL,
        uncovered=uncovered,
        failure=None,
        points=[],
    )
    return delivery


def status(phone: Phone, delivery: str) -> ParseStatus:
    stored = phone.journal.get_delivery(delivery)
    assert stored is not None
    return stored.status


def test_a_partial_delivery_goes_pending_then_parsed_once_its_section_is_covered(
    tmp_path: Path,
) -> None:
    phone = old_journal(tmp_path)
    delivery = fold_as_the_old_parser_did(phone, ("workouts",))
    assert status(phone, delivery) is ParseStatus.PARTIAL

    phone.journal.migrate()
    assert status(phone, delivery) is ParseStatus.PENDING

    FoldPass(phone.journal, Player(phone.journal, phone.archive)).pass_once()
    assert status(phone, delivery) is ParseStatus.PARSED
    (workout,) = phone.journal.export_records(section="workouts")
    assert workout.record.identity == "Walking|2021-12-24T00:02:43.000000Z"
    phone.journal.close()


@pytest.mark.parametrize(
    ("uncovered", "after"),
    [
        (("metrics.heart_rate_variability.heartbeatSeries",), ParseStatus.PENDING),
        (("ecg", "somethingNew"), ParseStatus.PENDING),
        (("somethingNew",), ParseStatus.PARTIAL),  # still not covered: left as it is
        (("metrics.foo",), ParseStatus.PARTIAL),
    ],
)
def test_the_migration_moves_only_rows_naming_a_newly_covered_key(
    tmp_path: Path, uncovered: tuple[str, ...], after: ParseStatus
) -> None:
    phone = old_journal(tmp_path)
    delivery = fold_as_the_old_parser_did(phone, uncovered)

    phone.journal.migrate()

    assert status(phone, delivery) is after
    phone.journal.close()
