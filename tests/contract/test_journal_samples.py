"""No sample vanishes: distinct samples that share a start are all kept, on every backend.

A point's key is (account, metric, field, source, start, seq): the samples of one
delivery that share the rest of the key but differ in anything else (ten foods logged at
one minute, an In Bed and an Asleep segment that start together, two distance samples
that differ in their end) get seq 0, 1, 2... by their contents
(``model.distinct_points``). Before migration 0014 the last of them overwrote the
others while the delivery said ``parsed``. A later delivery that re-sends the window
still replaces what it re-sends, whatever the order the two are folded in; a sample
sent twice exactly is kept once and counted in ``deliveries.repeated``. Bodies and
exports go through the real fold (``FoldService``, ``importer.import_export``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from healthlog import ids
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.fold.replay import replay
from healthlog.fold.service import FoldService, make_player
from healthlog.journal.port import Journal
from healthlog.model import NewDelivery, ParseStatus
from healthlog.ops import importer

from tests.contract.conftest import T0

#: ten foods logged at one minute (four share a value too: only their names differ),
#: and one of them sent twice exactly
FOODS = [
    {"date": "2026-03-01 12:30:00 +0100", "qty": qty, "source": "Food Log", "name": name}
    for qty, name in [
        (120.0, "apple"), (95.0, "banana"), (410.0, "pasta"), (33.0, "coffee"),
        (33.0, "tea"), (33.0, "juice"), (33.0, "water"), (250.0, "salad"),
        (180.0, "bread"), (60.0, "yoghurt"),
    ]
]  # fmt: skip
#: an In Bed and an Asleep segment that start together (unaggregated sleep, HAE 9.x)
SLEEP = [
    {"start": "2026-03-01 23:00:00 +0100", "end": "2026-03-02 07:00:00 +0100",
     "value": "In Bed", "qty": 8.0, "source": "Watch"},
    {"start": "2026-03-01 23:00:00 +0100", "end": "2026-03-02 06:30:00 +0100",
     "value": "Asleep", "qty": 7.5, "source": "Watch"},
]  # fmt: skip
#: two distance samples that differ only in their end, and two that differ only in value
DISTANCE = [
    {"date": "2026-03-01 08:00:00 +0100", "end": "2026-03-01 08:05:00 +0100", "qty": 0.4,
     "source": "Watch"},
    {"date": "2026-03-01 08:00:00 +0100", "end": "2026-03-01 08:10:00 +0100", "qty": 0.4,
     "source": "Watch"},
    {"date": "2026-03-01 09:00:00 +0100", "qty": 0.2, "source": "Phone"},
    {"date": "2026-03-01 09:00:00 +0100", "qty": 0.3, "source": "Phone"},
]  # fmt: skip


def body(foods: list[dict[str, object]], *, sleep: bool = True) -> bytes:
    metrics = [{"name": "dietary_energy", "units": "kcal", "data": foods}]
    if sleep:
        metrics += [
            {"name": "sleep_analysis", "units": "hr", "data": SLEEP},
            {"name": "walking_running_distance", "units": "km", "data": DISTANCE},
        ]
    return orjson.dumps({"data": {"metrics": metrics}})


#: one delivery id per time of receipt, for every test of this module
_ID_AT: dict[int, str] = {}


class Phone:
    """Sends bodies as ingest stores them, at chosen times, and folds what is pending."""

    def __init__(self, journal: Journal, tmp_path: Path) -> None:
        self.journal = journal
        self.archive = LocalArchive(tmp_path / "archive")
        self.account = journal.add_account("alice", "hash-a", account_id="acct-1")

    def send(self, payload: bytes, seconds: int) -> str:
        """Received ``seconds`` after T0, with an id fixed by that time (so that two
        journals given the same deliveries hold the same layers)."""
        at = T0 + timedelta(seconds=seconds)
        delivery_id = _ID_AT.setdefault(seconds, ids.new_delivery_id(at))
        key = body_key(self.account.id, delivery_id, "application/json")
        self.archive.put(key, payload)
        self.journal.insert_delivery(
            NewDelivery(delivery_id, self.account.id, at, key, len(payload), "application/json", ())
        )
        return delivery_id

    def fold(self) -> None:
        FoldService(self.journal, self.archive, Settings()).run(wait_s=10)


def held(journal: Journal, metric: str) -> list[tuple[object, ...]]:
    """The stored samples of ``metric``: (source, start, end, qty, text, layer), sorted."""
    found = journal.export_points(account_id="acct-1", metric=metric)
    return sorted(
        (p.point.source, p.point.start, p.point.end, p.point.qty, p.point.text, p.delivery_id)
        for p in found
    )


def test_every_distinct_sample_sharing_a_start_is_kept_and_counted(
    journal: Journal, tmp_path: Path
) -> None:
    phone = Phone(journal, tmp_path)
    delivery_id = phone.send(body([*FOODS, FOODS[3]]), 1)
    phone.fold()

    delivery = journal.get_delivery(delivery_id)
    assert delivery is not None and delivery.status is ParseStatus.PARSED
    foods = held(journal, "dietary_energy")
    assert [qty for _, _, _, qty, _, _ in foods] == sorted(float(f["qty"]) for f in FOODS)  # type: ignore[arg-type]
    assert sorted(text for *_, text, _ in held(journal, "sleep_analysis")) == [
        "Asleep",
        "In Bed",
    ]
    assert len(held(journal, "walking_running_distance")) == 4
    # the one exact repeat is held once and said so; what the delivery says it brought
    # is what the store holds, and what the catalog (`healthlog metrics`) counts
    assert delivery.repeated == 1
    stored = list(journal.export_points(account_id="acct-1"))
    assert delivery.points == len(stored) == len(FOODS) + 2 + 4
    assert sum(e.points for e in journal.catalog("acct-1")) == len(stored)


@pytest.mark.slow  # seconds: a property over many fold orders
def test_a_later_delivery_resending_the_window_replaces_its_samples_in_either_order(
    journal_factory: Callable[[], Journal], tmp_path: Path
) -> None:
    """The newest layer wins per key, seq included: the same samples re-sent (one value
    changed) replace the older delivery's, folded in time order or the other way."""
    later_foods = [dict(f) for f in FOODS]
    later_foods[2]["qty"] = 415.0  # the pasta's amount corrected on the phone
    results = []
    for order in ((0, 1), (1, 0)):
        journal = journal_factory()
        phone = Phone(journal, tmp_path / f"order{order}")
        sent = {}
        for which in order:
            payload = body(FOODS if which == 0 else later_foods, sleep=which == 0)
            sent[which] = phone.send(payload, 1 + which)
            phone.fold()
        foods = held(journal, "dietary_energy")
        assert {layer for *_, layer in foods} == {sent[1]}
        assert sorted(qty for _, _, _, qty, _, _ in foods) == sorted(
            float(f["qty"])  # type: ignore[arg-type]
            for f in later_foods
        )
        # the older delivery's samples the later one did not re-send are inherited
        assert len(held(journal, "sleep_analysis")) == 2
        results.append(journal.fingerprint())
    assert results[0] == results[1]


def test_a_fold_twice_of_the_same_delivery_changes_nothing(
    journal: Journal, tmp_path: Path
) -> None:
    phone = Phone(journal, tmp_path)
    phone.send(body(FOODS), 1)
    phone.fold()
    before = journal.fingerprint()
    replay(journal, make_player(journal, phone.archive, Settings()))
    assert journal.fingerprint() == before


EXPORT = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>
]>
<HealthData locale="en_GB">
 <ExportDate value="2026-03-05 10:00:00 +0100"/>
 <Me HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexNotSet"/>
{records}
</HealthData>
"""


def record(kind: str, start: str, end: str, value: str, unit: str = "kcal") -> str:
    unit_attr = f' unit="{unit}"' if unit else ""
    return (
        f' <Record type="{kind}" sourceName="Food Log"{unit_attr} startDate="{start}"'
        f' endDate="{end}" value="{value}"/>'
    )


def test_an_import_keeps_samples_sharing_a_start_whichever_steps_they_fall_in(
    journal: Journal, tmp_path: Path
) -> None:
    """An export folds in steps of a few points: samples of one key in different steps
    are each kept (a step takes the seq no earlier step of the delivery holds), an exact
    repeat is held once, and a refold of the import changes nothing."""
    energy = "HKQuantityTypeIdentifierDietaryEnergyConsumed"
    sleep = "HKCategoryTypeIdentifierSleepAnalysis"
    at = "2026-03-01 12:30:00 +0100"
    lines = [record(energy, at, at, str(v)) for v in (120, 95, 410, 33, 250, 180, 60)]
    lines.insert(4, record(energy, at, at, "95"))  # an exact repeat, in another step
    lines += [
        record(sleep, "2026-03-01 23:00:00 +0100", "2026-03-02 07:00:00 +0100",
               "HKCategoryValueSleepAnalysisInBed", unit=""),
        record(sleep, "2026-03-01 23:00:00 +0100", "2026-03-02 06:30:00 +0100",
               "HKCategoryValueSleepAnalysisAsleepCore", unit=""),
    ]  # fmt: skip
    path = tmp_path / "export.xml"
    path.write_text(EXPORT.format(records="\n".join(lines)), encoding="utf-8")
    archive = LocalArchive(tmp_path / "archive")
    account = journal.add_account("alice", "hash-a", account_id="acct-1")
    settings = Settings(fold_step_points=2)

    report = importer.import_export(
        path, journal=journal, archive=archive, settings=settings, account_id=account.id
    )

    assert report.status is ParseStatus.PARSED, report
    foods = held(journal, "dietary_energy")
    assert sorted(qty for _, _, _, qty, _, _ in foods) == [
        33.0,
        60.0,
        95.0,
        120.0,
        180.0,
        250.0,
        410.0,
    ]
    assert len(held(journal, "sleep_analysis")) == 2
    delivery = journal.get_delivery(report.delivery_id)
    assert delivery is not None
    stored = list(journal.export_points(account_id=account.id))
    assert len(stored) == 9
    # the repeat fell in another step than its twin: held once, and counted as a repeat
    assert (delivery.points, delivery.repeated) == (len(stored), 1)
    assert sum(e.points for e in journal.catalog(account.id)) == len(stored)
    before = journal.fingerprint()
    replay(journal, make_player(journal, archive, settings))
    assert journal.fingerprint() == before
    refolded = journal.get_delivery(report.delivery_id)
    assert refolded is not None and refolded.points == len(stored) + 1  # it wrote them all
