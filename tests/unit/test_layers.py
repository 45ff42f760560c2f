"""Layers: the newest delivery wins per point key, whatever the fold order.

A property test over random sets of overlapping deliveries and random permutations of
their fold order: the showcase fingerprint is always the one of folding in journal
order, equals a model of "newest layer wins", and survives a replay of everything.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from healthlog import ids, tokens
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.fold.replay import replay
from healthlog.journal.sqlite import SqliteJournal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Phone, metrics_body

T0 = datetime(2026, 5, 1, tzinfo=ids.EPOCH.tzinfo)

# a point key is (metric, source, hour); the value is what this delivery says
point_keys = st.tuples(
    st.sampled_from(["step_count", "heart_rate"]), st.sampled_from(["Watch", "Oura"]),
    st.integers(0, 3),
)  # fmt: skip
delivery = st.tuples(
    st.integers(0, 3),  # received_at, in seconds after T0: equal times do happen
    st.dictionaries(point_keys, st.integers(1, 200), min_size=1, max_size=6),
)


def body_of(points: dict[tuple[str, str, int], int]) -> dict[str, object]:
    by_metric: dict[str, list[dict[str, object]]] = {}
    for (metric, source, hour), value in sorted(points.items()):
        date = f"2026-04-30 0{hour}:00:00 +0200"
        if metric == "heart_rate":
            point: dict[str, object] = {"date": date, "Min": value, "Avg": value, "Max": value}
        else:
            point = {"date": date, "qty": value}
        point["source"] = source
        by_metric.setdefault(metric, []).append(point)
    return metrics_body(*[(m, "count", pts) for m, pts in by_metric.items()])


def fresh(folder: Path) -> Phone:
    journal = SqliteJournal(str(folder / "journal.db"))
    journal.migrate()
    archive = LocalArchive(folder / "archive")
    account = journal.add_account("alice", tokens.hash_token("t"))
    return Phone(journal, archive, account, "t")


def utc_start(hour: int) -> str:
    """The UTC text of ``2026-04-30 0<hour>:00:00 +0200``."""
    return (datetime(2026, 4, 29, 22, tzinfo=T0.tzinfo) + timedelta(hours=hour)).strftime(
        "%Y-%m-%dT%H:%M:%S.000000Z"
    )


def showcase(phone: Phone) -> dict[tuple[str, str, str, str], float | None]:
    return {
        (sp.point.metric, sp.point.source, sp.point.field, sp.point.start): sp.point.qty
        for sp in phone.journal.export_points()
    }


@pytest.mark.slow  # seconds: a property over many fold orders
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deliveries=st.lists(delivery, min_size=1, max_size=6), data=st.data())
def test_showcase_is_the_same_whatever_order_deliveries_are_folded_in(
    deliveries: list[tuple[int, dict[tuple[str, str, int], int]]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        a = fresh(folder)
        sent = [
            a.send(body_of(points), at=T0 + timedelta(seconds=offset))
            for offset, points in deliveries
        ]
        a.journal.close()
        # b: the very same journal (same ids), to be folded in another order
        shutil.copyfile(folder / "journal.db", folder / "journal-b.db")
        a.journal = SqliteJournal(str(folder / "journal.db"))
        b = Phone(SqliteJournal(str(folder / "journal-b.db")), a.archive, a.account, "t")

        # a: the scheduled pass, in journal order
        FoldPass(a.journal, Player(a.journal, a.archive), page_size=2).pass_once()
        # b: the same deliveries folded in a random order
        order = data.draw(st.permutations(range(len(deliveries))))
        player_b = Player(b.journal, b.archive)
        for i in order:
            player_b.play(sent[i])
        assert b.journal.fingerprint() == a.journal.fingerprint()

        # the model: per key, the value of the newest layer by (received_at, id)
        newest: dict[tuple[str, str, int], tuple[tuple[int, str], int]] = {}
        for (offset, points), did in zip(deliveries, sent, strict=True):
            for key, value in points.items():
                layer = (offset, did)
                if key not in newest or layer > newest[key][0]:
                    newest[key] = (layer, value)
        expected = {
            (metric, source, "avg" if metric == "heart_rate" else "qty", utc_start(hour)): value
            for (metric, source, hour), (_, value) in newest.items()
        }
        stored = showcase(a)
        assert {k: stored[k] for k in expected} == expected

        # a replay of everything gives the same fingerprint
        fingerprint = a.journal.fingerprint()
        replay(a.journal, Player(a.journal, a.archive))
        assert a.journal.fingerprint() == fingerprint
        a.journal.close()
        b.journal.close()
