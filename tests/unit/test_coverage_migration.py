"""The change that covers a section moves the ``partial`` rows naming it back to pending.

A delivery folded by the old parser (metrics only: its workouts were an uncovered key)
is written the way that parser wrote it, the journal is migrated to this version, the
row is ``pending`` again, and the next pass folds it to ``parsed``.

Which keys migration 0005 re-pends is not written down a second time here: it is every
section the parser reads (``healthlog.hae.parse.SECTIONS``, the one list) less the
``metrics`` the old parser already read, plus the HRV beat series that parser reported
as uncovered; both backends' SQL is read and checked against that.
"""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import orjson
import pytest
from healthlog import journal, tokens
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.hae.parse import SECTIONS, parse
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import ParseStatus

from tests.conftest import SAMPLES, Phone

WORKOUT = "workouts_v1_walking_route-latlon_elevation_2021_irvinlim-test.json"
BEFORE_RECORDS = 3  # the schema the metrics-only parser ran on
COVERED_BEFORE_0005 = ("metrics",)  # what that parser read
# the key that parser reported for every HRV beat-to-beat series (today's parser reports
# it only for a series it cannot read)
HEARTBEAT_SERIES = "metrics.heart_rate_variability.heartbeatSeries"
#: the uncovered keys the change that came with migration 0005 made covered
COVERED_BY_0005 = (*(s for s in SECTIONS if s not in COVERED_BEFORE_0005), HEARTBEAT_SERIES)
MIGRATIONS = Path(journal.__file__).parent / "migrations"


def old_journal(tmp_path: Path) -> Phone:
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate(target=BEFORE_RECORDS)
    account = journal.add_account("alice", tokens.hash_token("t"))
    return Phone(journal, LocalArchive(tmp_path / "archive"), account, "t")


def fold_as_the_old_parser_did(phone: Phone, uncovered: tuple[str, ...]) -> str:
    """The outcome the old code wrote, written as it wrote it: into the old schema."""
    delivery = phone.send((SAMPLES / WORKOUT).read_bytes())
    assert isinstance(phone.journal, SqliteJournal)
    with closing(sqlite3.connect(phone.journal.path)) as conn, conn:
        conn.execute(
            "UPDATE deliveries SET status = 'partial', uncovered = ? WHERE id = ?",
            (json.dumps(list(uncovered)), delivery),
        )
    return delivery


def status(phone: Phone, delivery: str) -> ParseStatus:
    """The status as stored: read by SQL, since the journal's own statements read the
    columns of the newest schema and the journal may not be migrated yet."""
    assert isinstance(phone.journal, SqliteJournal)
    with closing(sqlite3.connect(phone.journal.path)) as conn:
        (found,) = conn.execute("SELECT status FROM deliveries WHERE id = ?", (delivery,))
    return ParseStatus(found[0])


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
        *(((key,), ParseStatus.PENDING) for key in COVERED_BY_0005),
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


# --- the migration's list is the parser's ------------------------------------------------


def listed_keys(backend: str) -> list[str]:
    """The uncovered keys that ``0005_cover_sections.sql`` of ``backend`` moves back."""
    (script,) = (MIGRATIONS / backend).glob("0005_*.sql")
    sql = "\n".join(line.split("--", 1)[0] for line in script.read_text().splitlines())
    # PostgreSQL: uncovered && ARRAY[...]; SQLite: json_each(uncovered) ... IN (...)
    (items,) = re.findall(r"(?:ARRAY\s*\[|\bIN\s*\()([^\])]*)[\])]", sql)
    return re.findall(r"'([^']*)'", items)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_migration_lists_exactly_the_keys_its_change_covered(backend: str) -> None:
    keys = listed_keys(backend)
    assert len(keys) == len(set(keys))
    assert set(keys) == set(COVERED_BY_0005), (
        "0005 lists what the change that came with it covered: a section covered later "
        "needs a migration of its own (and its baseline here), never an edit of 0005"
    )


def test_the_beat_series_key_is_the_one_the_parser_reports() -> None:
    point = {"date": "2024-06-01 03:12:40 +0100", "qty": 41.2, "heartbeatSeries": [1, 2]}
    metric = {"name": "heart_rate_variability", "units": "ms", "data": [point]}
    assert parse(orjson.dumps({"data": {"metrics": [metric]}})).uncovered == (HEARTBEAT_SERIES,)


def test_docs_describe_every_covered_section() -> None:
    identities = (Path(__file__).parents[2] / "docs" / "sections.md").read_text()
    table = identities.split("## Identity per section", 1)[1].split("\n## ", 1)[0]
    for section in (*SECTIONS[1:], "heartbeatSeries"):
        assert f"| `{section}`" in table, f"docs/sections.md does not describe {section}"
