"""Layers over every section: the newest delivery wins per identity, in any fold order.

Random deliveries carry random events of every section (overlapping identities, series
present or not, units that convert or not); folded in journal order by a pass and in a
random order by the Player, the two showcases have the same fingerprint, and a replay
of everything changes nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog import ids
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.fold.replay import replay
from healthlog.journal.sqlite import SqliteJournal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Phone
from tests.unit.test_layers import fresh

T0 = datetime(2026, 5, 1, tzinfo=ids.EPOCH.tzinfo)


def at(minute: int) -> str:
    return f"2026-04-30 10:{minute:02d}:00 +0200"


values = st.integers(1, 300)
minutes = st.integers(0, 3)
series = st.none() | st.lists(values, min_size=1, max_size=3)
energy_unit = st.sampled_from(["kcal", "kJ", "Cal", "furlongs"])


@st.composite
def workout(draw: st.DrawFn) -> dict[str, Any]:
    minute = draw(minutes)
    event: dict[str, Any] = {"name": "Walk", "start": at(minute), "end": at(minute + 30)}
    if draw(st.booleans()):
        event["id"] = f"W-{minute}"
    event["distance"] = {"qty": draw(values), "units": draw(st.sampled_from(["km", "mi"]))}
    if (route := draw(series)) is not None:
        event["route"] = [{"lat": v / 10, "lon": 1.0, "timestamp": at(minute)} for v in route]
    if (hr := draw(series)) is not None:
        event["heartRateData"] = [{"date": at(minute), "qty": v, "units": "bpm"} for v in hr]
    if (energy := draw(series)) is not None:
        unit = draw(energy_unit)
        event["activeEnergy"] = [{"date": at(minute), "qty": v, "units": unit} for v in energy]
    return event


def named(key: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda m, name, v: {"start": at(m), key: name, "value": v, "severity": str(v)},
        minutes,
        st.sampled_from(["A", "B"]),
        values,
    )


ecg = st.builds(
    lambda m, vs: {
        "start": at(m),
        "classification": "Sinus Rhythm",
        "voltageMeasurements": [
            {"date": 1777536000 + n / 512, "voltage": v, "units": "mcV"} for n, v in enumerate(vs)
        ],
    },
    minutes,
    st.lists(values, min_size=1, max_size=4),
)
hrv = st.builds(
    lambda m, q, beats: {
        "date": at(m),
        "qty": q,
        "source": "Watch",
        "heartbeatSeries": [
            {"date": 1777536000 + b, "timeSinceStart": b, "precededByGap": False} for b in beats
        ],
    },
    minutes,
    values,
    st.lists(values, max_size=3),
)
weights = st.builds(
    lambda m, q, unit: {"name": "weight_body_mass", "units": unit, "data": [
        {"date": at(m), "qty": q, "source": "Scale"}]},
    minutes, values, st.sampled_from(["kg", "lb", "stone-ish"]),
)  # fmt: skip

delivery = st.tuples(
    st.integers(0, 3),  # received_at, seconds after T0: equal times do happen
    st.fixed_dictionaries(
        {},
        optional={
            "workouts": st.lists(workout(), max_size=2),
            "symptoms": st.lists(named("name"), max_size=2),
            "cycleTracking": st.lists(named("name"), max_size=2),
            "medications": st.lists(named("displayText"), max_size=2),
            "stateOfMind": st.lists(named("kind"), max_size=2),
            "heartRateNotifications": st.lists(named("heartNotification"), max_size=2),
            "ecg": st.lists(ecg, max_size=1),
            "metrics": st.lists(weights, max_size=1).map(
                lambda ws: [*ws, {"name": "heart_rate_variability", "units": "ms", "data": []}]
            ),
        },
    ),
)


def with_hrv(inner: dict[str, Any], points: list[dict[str, Any]]) -> dict[str, Any]:
    if points and "metrics" in inner:
        inner["metrics"][-1]["data"] = points
    return {"data": inner}


@pytest.mark.slow  # seconds: a property over many fold orders
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    deliveries=st.lists(st.tuples(delivery, st.lists(hrv, max_size=2)), min_size=1, max_size=5),
    data=st.data(),
)
def test_every_section_folds_to_the_same_showcase_in_any_order(
    deliveries: list[tuple[tuple[int, dict[str, Any]], list[dict[str, Any]]]],
    data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        a = fresh(folder)
        sent = [
            a.send(with_hrv(inner, beats), at=T0 + timedelta(seconds=offset))
            for (offset, inner), beats in deliveries
        ]
        a.journal.close()
        shutil.copyfile(folder / "journal.db", folder / "journal-b.db")
        a.journal = SqliteJournal(str(folder / "journal.db"))
        b = Phone(SqliteJournal(str(folder / "journal-b.db")), a.archive, a.account, "t")

        report = FoldPass(a.journal, Player(a.journal, a.archive), page_size=2).pass_once()
        assert report.tally.classes.get("parsed", 0) == len(deliveries)
        player_b = Player(b.journal, b.archive)
        for i in data.draw(st.permutations(range(len(deliveries)))):
            player_b.play(sent[i])
        assert b.journal.fingerprint() == a.journal.fingerprint()

        fingerprint = a.journal.fingerprint()
        replay(a.journal, Player(a.journal, a.archive))
        assert a.journal.fingerprint() == fingerprint
        a.journal.close()
        b.journal.close()
