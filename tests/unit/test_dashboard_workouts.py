"""The dashboard's workouts over plain HTTP (Flask's test client), on folded workouts
(``tests.workout_data``): each workout's figures, the weekly totals, one workout's
figures, splits and heart-rate zones, in the account's units or those asked for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from healthlog.archive.local import LocalArchive
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.journal.sqlite import SqliteJournal

from tests.workout_data import RIDE_ID, RUN_ID, WALK_ID, build


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("workouts")
    build(folder)
    yield folder


def client(where: Path, account: str) -> FlaskClient:
    journal = SqliteJournal(str(where / "journal.db"))
    app = create_app(
        journal, LocalArchive(where / "archive"), DashboardOptions(account_name=account)
    )
    app.testing = True
    return app.test_client()


def get(c: FlaskClient, url: str, status: int = 200) -> Any:
    reply = c.get(url)
    assert reply.status_code == status, reply.get_data(as_text=True)
    return reply.get_json()


def values(figures: dict[str, Any]) -> dict[str, tuple[float, str]]:
    return {k: (v["value"], v["unit"]) for k, v in figures.items() if k != "unit_system"}


def test_the_list_gives_each_workouts_figures_and_the_weeks(where: Path) -> None:
    listed = get(client(where, "carol"), "/api/workouts")
    assert listed["unit_system"] == "metric"
    by_id = {w["identity"]: w for w in listed["workouts"]}
    assert set(by_id) == {WALK_ID, RUN_ID, RIDE_ID}
    run = by_id[RUN_ID]
    assert values(run["figures"]) == {
        "duration": (1200.0, "s"), "distance": (3.2, "km"), "active_energy": (250.0, "kcal"),
        "pace": (375.0, "s/km"), "elevation_gain": (12.0, "m"),
    }  # fmt: skip
    assert run["figures"]["distance"] == {
        "value": 3.2, "unit": "km", "basis": "sent", "display_name": "Distance",
    }  # fmt: skip
    assert run["distance"] == {"qty": 3.2, "units": "km"}  # the head as sent, as before
    weeks = {t["week"]: t for t in listed["weeks"]}
    assert weeks["2026-W11"] == {
        "week": "2026-W11", "monday": "2026-03-09", "workouts": 1, "duration_s": 3600.0,
        "distance": 20.0, "distance_unit": "km", "active_energy": 500.0, "energy_unit": "kcal",
    }  # fmt: skip
    assert weeks["2026-W12"]["distance"] == 3.2


def test_one_workout_has_its_figures_splits_and_zones(where: Path) -> None:
    w = get(client(where, "carol"), f"/api/workouts/{RUN_ID}")
    found = values(w["figures"])
    assert found["avg_heart_rate"] == (130.0, "bpm") and found["max_heart_rate"] == (143.0, "bpm")
    assert w["figures"]["avg_heart_rate"]["basis"] == "series"
    assert [(s["split"], s["distance"], s["unit"], s["pace_unit"]) for s in w["splits"]] == [
        (1, 1.0, "km", "s/km"), (2, 1.0, "km", "s/km"), (3, 1.0, "km", "s/km"),
        (4, 0.2, "km", "s/km"),
    ]  # fmt: skip
    assert w["splits"][0]["pace"] == pytest.approx(375.0, abs=0.2)
    zones = w["heart_rate_zones"]
    assert zones["max_bpm"] == 181.0 and [z["zone"] for z in zones["zones"]] == [1, 2, 3, 4, 5]
    assert sum(z["seconds"] for z in zones["zones"]) == 1200.0
    assert w["elevation_unit"] == "m" and w["route"][0]["elevation"] == 500.0
    assert len(w["heart_rate"]) == 21 and len(w["route"]) == 121  # as before


def test_an_imperial_account_sees_miles_and_any_account_may_ask_for_them(where: Path) -> None:
    dave = get(client(where, "dave"), f"/api/workouts/{RUN_ID}")
    assert dave["unit_system"] == "imperial"
    assert values(dave["figures"])["distance"] == (1.988, "mi")
    assert values(dave["figures"])["elevation_gain"] == (39.37, "ft")
    assert [s["unit"] for s in dave["splits"]] == ["mi", "mi"]
    assert dave["elevation_unit"] == "ft" and dave["route"][0]["elevation"] == 1640.4
    carol = client(where, "carol")
    asked = get(carol, f"/api/workouts/{RUN_ID}?units=imperial")
    assert asked["figures"] == dave["figures"]  # the same read, the same figures
    assert get(carol, "/api/workouts?units=imperial")["weeks"][-1]["distance_unit"] == "mi"
    assert get(client(where, "dave"), "/api/workouts?units=metric")["unit_system"] == "metric"


def test_a_summary_without_a_series_is_the_heart_rate_and_no_zones(where: Path) -> None:
    ride = get(client(where, "carol"), f"/api/workouts/{RIDE_ID}")
    assert ride["figures"]["avg_heart_rate"] == {
        "value": 152.0, "unit": "bpm", "basis": "sent", "display_name": "Average heart rate",
    }  # fmt: skip
    assert ride["heart_rate"] == [] and ride["heart_rate_zones"] is None
    assert ride["splits"] == [] and values(ride["figures"])["speed"] == (20.0, "km/h")


def test_bad_units_are_a_400_naming_the_parameter(where: Path) -> None:
    c = client(where, "carol")
    for url in ("/api/workouts?units=furlongs", f"/api/workouts/{RUN_ID}?units=METRIC"):
        said = get(c, url, 400)
        assert said["status"] == 400 and said["error"].startswith("units: ")
        assert "metric or imperial" in said["error"]
    assert "no such workout" in get(c, "/api/workouts/nope", 404)["error"]
