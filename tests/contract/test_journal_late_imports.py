"""Late points and imports (issue 21, item 3): a point an import of the Health app's
export brought is never late, and an import does not raise the bar that the HAE
deliveries after it are judged by; migration 0019 corrects the late counts a journal
kept before. The same on both backends (docs/dashboard.md, "Data coverage")."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from healthlog.archive.keys import EXPORT_XML, EXPORT_ZIP
from healthlog.journal import late_imports
from healthlog.journal.core import SqlJournal
from healthlog.journal.port import Journal
from healthlog.model import Point

from tests.contract.conftest import ADAPTERS, Seed, open_journal, point


def at(day: str, hour: int, source: str = "Watch") -> Point:
    return point(f"{day}T{hour:02d}:00:00.000000Z", source=source, utc_offset=0)


#: HAE's first delivery: up to 08:00 on 11 March
FIRST = [at("2026-03-10", 8), at("2026-03-11", 8)]
#: then an import of history, up to 12:00 on 11 March (the moment the export was made)
IMPORT = [
    at("2025-06-01", 8, "iPhone"),
    at("2025-06-02", 8, "iPhone"),
    at("2026-03-10", 9, "iPhone"),
    at("2026-03-11", 12, "iPhone"),
]
#: then HAE again: 07:00 is older than what HAE brought before (late), 10:00 only older
#: than what the import brought (not late), the 12th new
SECOND = [at("2026-03-11", 7), at("2026-03-11", 10), at("2026-03-12", 8)]
#: what the rule before 0019 counted late for these three deliveries
AS_BEFORE = {"2025-06-01": 1, "2025-06-02": 1, "2026-03-10": 1, "2026-03-11": 2}


def late(journal: Journal, account_id: str) -> dict[str, int]:
    return {day: n for _, day, n in journal.late_points(account_id=account_id)}


def fold_all(seed: Seed, content_type: str = EXPORT_ZIP) -> str:
    account = seed.account()
    seed.fold(seed.delivery(account), FIRST)
    seed.fold(seed.delivery(account, content_type=content_type), IMPORT)
    seed.fold(seed.delivery(account), SECOND)
    return account.id


@pytest.mark.parametrize("content_type", [EXPORT_ZIP, EXPORT_XML])
def test_an_import_is_never_late_and_raises_no_bar(
    journal: Journal, seed: Seed, content_type: str
) -> None:
    alice = fold_all(seed, content_type)
    assert late(journal, alice) == {"2026-03-11": 1}
    days = {day: n for _, day, n in journal.metric_days(account_id=alice)}
    assert days == {"2025-06-01": 1, "2025-06-02": 1, "2026-03-10": 2, "2026-03-11": 4,
                    "2026-03-12": 1}  # fmt: skip


def test_the_same_points_from_hae_alone_are_late_as_before(journal: Journal, seed: Seed) -> None:
    """What an import changes is only the import's: a delivery of HAE in its place is
    judged as any (the history older than the first delivery's points is late)."""
    alice = fold_all(seed, "application/json")
    assert late(journal, alice) == AS_BEFORE


def test_hae_after_an_import_first_is_judged_by_hae_alone(journal: Journal, seed: Seed) -> None:
    """History imported first, then HAE's first delivery re-sends a day the export holds
    under other keys: nothing is late; HAE's next delivery is judged against the first."""
    account = seed.account()
    seed.fold(seed.delivery(account, content_type=EXPORT_ZIP), IMPORT)
    seed.fold(seed.delivery(account), [at("2026-03-10", 10), at("2026-03-11", 9)])
    assert late(journal, account.id) == {}
    seed.fold(seed.delivery(account), [at("2026-03-11", 8), at("2026-03-12", 8)])
    assert late(journal, account.id) == {"2026-03-11": 1}


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_migration_0019_takes_what_imports_made_late_off(adapter: str, tmp_path: Path) -> None:
    """A journal whose fold judged the import by the rule before 0019 (its history and
    the HAE point only the import's bar made late): 0019 leaves the one late point."""
    with ExitStack() as resources:
        journal = open_journal(adapter, tmp_path, resources)
        assert isinstance(journal, SqlJournal)
        journal.migrate(target=18)
        seed = Seed(journal)
        alice = fold_all(seed)
        # an account without imports keeps its late counts whatever they are
        bob = seed.account("bob")
        seed.fold(seed.delivery(bob), FIRST)
        seed.fold(seed.delivery(bob), IMPORT)
        p = journal._sql.param

        def as_before(conn: Any) -> None:  # what the fold before 0019 kept
            for day, n in AS_BEFORE.items():
                conn.execute(
                    f"UPDATE point_days SET late = {p('n')} WHERE account_id = {p('a')}"
                    f" AND day = {p('d')}",
                    {"n": n, "a": alice, "d": day},
                )

        journal._driver.attempt(as_before, write=True)
        assert late(journal, alice) == AS_BEFORE
        bobs = late(journal, bob.id)
        assert bobs == {"2025-06-01": 1, "2025-06-02": 1, "2026-03-10": 1}
        journal.migrate()
        assert late(journal, alice) == {"2026-03-11": 1}
        assert late(journal, bob.id) == bobs
        journal.migrate()  # once only
        assert late(journal, alice) == {"2026-03-11": 1}
        journal.close()


def test_the_windows_0019_replays() -> None:
    """The ranges of starts whose points only an import made late: an import's own older
    than the bar (less what an earlier import holds), HAE's between the two bars."""
    z = "T00:00:00.000000Z"
    extents = [
        ("d1", "m", "2026-03-01" + z, "2026-03-05" + z, False),
        ("i1", "m", "2025-01-01" + z, "2026-03-07" + z, True),
        ("i2", "m", "2024-01-01" + z, "2026-03-08" + z, True),
        ("d2", "m", "2026-03-04" + z, "2026-03-09" + z, False),
        ("d3", "m", "2026-03-09" + z, "2026-03-10" + z, False),
    ]
    found = late_imports.windows(extents)
    # i1: older than d1's last (the 5th); i2: older than i1's last, less what i1 holds
    assert found[("m", True)] == [("2024-01-01" + z, "2026-03-05" + z)]
    # d2: after HAE's bar (the 5th) up to the imports' (the 8th); d3 is past both
    assert found[("m", False)] == [("2026-03-05T00:00:00.000001Z", "2026-03-08" + z)]
