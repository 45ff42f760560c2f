"""Values a database might refuse, folded through the real fold on every backend.

NUL (docs/database.md, "NUL"): one body gives one showcase on SQLite and PostgreSQL, NUL
replaced by U+FFFD before the write. A value the database refuses (too long for an
index, out of range) fails its delivery (``refused_value``): it is a property of the
body, so it is never left ``pending`` to be parsed again at every pass.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import orjson
import pytest
from healthlog import ids
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.errors import Circumstance, FoldFailure, ValueRefused
from healthlog.fold.service import FoldService
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import NewDelivery, ParseStatus, Point

from tests import pg
from tests.contract.conftest import T0

DELIVERY_ID = ids.new_delivery_id(T0)


def fold_body(journal: Journal, tmp_path: Path, body: bytes) -> str:
    """Archive and journal ``body`` as ingest would, fold it; return its delivery id.

    The account and the delivery have fixed ids, so two journals fold the same rows.
    """
    archive = LocalArchive(tmp_path / "archive")
    account = journal.add_account("alice", "hash-a", account_id="acct-1")
    delivery_id = DELIVERY_ID
    key = body_key(account.id, delivery_id, "application/json")
    archive.put(key, body)
    journal.insert_delivery(
        NewDelivery(delivery_id, account.id, T0, key, len(body), "application/json", ())
    )
    FoldService(journal, archive, Settings()).run(wait_s=10)
    return delivery_id


NUL = "\u0000"
BODY_WITH_NUL = orjson.dumps(
    {
        "data": {
            "metrics": [
                {
                    "name": f"step{NUL}count",
                    "units": "count",
                    "data": [
                        {"date": "2026-01-01 10:00:00 +0100", "qty": 5, "source": f"a{NUL}b",
                         "note": f"x{NUL}y"},
                    ],
                }
            ],
            "symptoms": [
                {"name": f"Head{NUL}ache", "start": "2026-01-01 10:00:00 +0100",
                 "end": "2026-01-01 11:00:00 +0100", "severity": f"mild{NUL}"}
            ],
        }
    }
)  # fmt: skip


def test_a_body_with_nul_folds_to_the_same_showcase_on_every_backend(
    journal: Journal, tmp_path: Path
) -> None:
    delivery_id = fold_body(journal, tmp_path, BODY_WITH_NUL)

    delivery = journal.get_delivery(delivery_id)
    assert delivery is not None and delivery.status is ParseStatus.PARSED, delivery
    (point,) = [p.point for p in journal.export_points()]
    assert (point.metric, point.source) == ("step\ufffdcount", "a\ufffdb")
    assert orjson.loads(point.extra or "{}") == {"note": "x\ufffdy"}
    (symptom,) = [r.record for r in journal.export_records(section="symptoms")]
    assert symptom.name == "Head\ufffdache"
    assert NUL not in symptom.body and "\\u0000" not in symptom.body
    assert orjson.loads(symptom.body)["severity"] == "mild\ufffd"


@pytest.mark.postgres
def test_nul_gives_the_same_fingerprint_on_sqlite_and_postgresql(tmp_path: Path) -> None:
    """Not only the same values read back: the very same rows, column by column."""
    fingerprints = []
    with pg.fresh_database() as url:
        for n, journal in enumerate([SqliteJournal(str(tmp_path / "j.db")), PostgresJournal(url)]):
            journal.migrate()
            fold_body(journal, tmp_path / f"a{n}", BODY_WITH_NUL)
            fingerprints.append(journal.fingerprint())
            journal.close()

    assert fingerprints[0] == fingerprints[1]


@pytest.mark.postgres
def test_a_value_postgresql_cannot_index_fails_the_delivery_instead_of_retrying_it(
    tmp_path: Path,
) -> None:
    """A symptom whose 10 000-character name is in its identity: an index row too large
    for PostgreSQL (SQLSTATE 54000). (A point's names are bounded by the parser.)"""
    rng = random.Random(7)  # letters that do not compress below the index row limit
    name = "".join(rng.choice(string.ascii_letters) for _ in range(10_000))
    body = orjson.dumps(
        {"data": {"symptoms": [{"name": name, "start": "2026-01-01 10:00:00 +0100",
                                "end": "2026-01-01 11:00:00 +0100", "severity": "Mild"}]}}
    )  # fmt: skip
    with pg.fresh_database() as url:
        journal = PostgresJournal(url)
        journal.migrate()
        delivery_id = fold_body(journal, tmp_path, body)
        delivery = journal.get_delivery(delivery_id)
        pending = journal.count_pending()
        journal.close()

    assert delivery is not None
    assert (delivery.status, delivery.failure) == (ParseStatus.FAILED, "refused_value")
    assert pending == 0  # not left to be parsed again at every pass


def test_the_journal_refuses_a_value_as_a_failure_of_the_delivery(journal: Journal) -> None:
    """Out of range for the database: ValueRefused, a FoldFailure, never a circumstance."""
    account = journal.add_account("alice", "hash-a")
    new = NewDelivery(ids.new_delivery_id(T0), account.id, T0, "k", 1, "application/json", ())
    journal.insert_delivery(new)
    huge = Point("m", "qty", "s", "2026-01-01T00:00:00.000000Z", 2**70, None, 1.0, None, "u")

    with pytest.raises(ValueRefused) as refused:
        journal.write_outcome(
            new.id, expected=ParseStatus.PENDING, status=ParseStatus.PARSED, uncovered=(),
            failure=None, points=[huge],
        )  # fmt: skip

    assert isinstance(refused.value, FoldFailure) and not isinstance(refused.value, Circumstance)
    assert "1180591620717411303424" not in str(refused.value)  # no value in the message
    assert list(journal.export_points()) == []  # nothing half-written
