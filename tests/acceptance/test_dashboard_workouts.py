"""The workout pages in a real browser, at a desktop's 1280 px and a phone's 390 px.

`healthlog dashboard` over the workouts of ``tests.workout_data`` (the real HAE 8.1.2 walk
of tests/fixtures/hae/samples, and a run with a route, heart rate, energy in kJ and
elevation in cm). Headless Chromium (tests/browser.py) opens each page at both widths
and checks: the figures the API gives are written out (duration, distance, energy,
average heart rate, pace), the splits and zones are tables, the page is no wider than
the window, the route keeps its true proportions, and no request leaves the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from healthlog.local.launcher import free_port

from tests import browser
from tests.workout_data import RUN_ID, WALK_ID, build

WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("workouts")
    build(folder)
    port = free_port()
    with browser.dashboard(folder, port):  # two accounts: ?account= chooses
        yield f"http://127.0.0.1:{port}"


@contextmanager
def width(driver: Any, pixels: int) -> Iterator[None]:
    """The page laid out ``pixels`` wide, as on a phone at 390 (a desktop window cannot
    be made that narrow: the viewport is emulated)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": pixels, "height": 900, "deviceScaleFactor": 1, "mobile": pixels < 600},
    )
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def open_page(driver: Any, site: str, path: str) -> None:
    browser.console_errors(driver)
    browser.requests_made(driver)
    driver.get(site + path)
    assert browser.wait_ready(driver) == "yes"
    browser.wait_painted(driver)
    assert not browser.console_errors(driver), path
    own = urlsplit(site).netloc
    foreign = [
        u for u in browser.requests_made(driver)
        if urlsplit(u).scheme not in ("data", "blob", "about") and urlsplit(u).netloc != own
    ]  # fmt: skip
    assert not foreign, f"{path} asked other hosts: {foreign}"


def facts(driver: Any) -> dict[str, str]:
    found: dict[str, str] = driver.execute_script(
        "const dl = document.querySelector('dl.facts');"
        "return Object.fromEntries([...dl.querySelectorAll('dt')]"
        "  .map(dt => [dt.textContent, dt.nextElementSibling.textContent]));"
    )
    return found


def rows(driver: Any, box: str) -> list[list[str]]:
    found: list[list[str]] = driver.execute_script(
        f"return [...document.querySelectorAll('#{box} tbody tr')]"
        ".map(tr => [...tr.cells].map(td => td.textContent));"
    )
    return found


def overflow(driver: Any) -> tuple[int, int]:
    found: list[int] = driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth];"
    )
    return found[0], found[1]


def route_shape(driver: Any) -> tuple[float, float, float, float]:
    """Pixels per degree of longitude over pixels per degree of latitude, as drawn; the
    cosine of the route's mean latitude (what it must be); the plot's width in px; the
    share of the plot's height the route spans (it runs due north)."""
    found: list[float] = driver.execute_script(
        "const gd = document.getElementById('route'), L = gd._fullLayout;"
        "const x = L.xaxis, y = L.yaxis, lats = gd.data[0].y;"
        "const lat = lats.reduce((a, b) => a + b, 0) / lats.length;"
        "const span = (r) => r[1] - r[0];"
        "return [(x._length / span(x.range)) / (y._length / span(y.range)),"
        "        Math.cos(lat * Math.PI / 180), x._length,"
        "        (Math.max(...lats) - Math.min(...lats)) / span(y.range)];"
    )
    return found[0], found[1], found[2], found[3]


@pytest.mark.parametrize("pixels", WIDTHS)
def test_the_run_shows_its_figures_splits_and_zones_and_fits_the_width(
    driver: Any, site: str, pixels: int, tmp_path: Path
) -> None:
    with width(driver, pixels):
        open_page(driver, site, f"/workouts/{quote(RUN_ID)}?account=carol")
        said = facts(driver)
        assert said["duration"] == "20:00"
        assert said["distance"] == "3.2 km"
        assert said["active energy"] == "250 kcal"  # 1046 kJ sent
        assert said["average heart rate"] == "130 bpm"
        assert said["average pace"] == "6:15 /km"
        assert said["elevation gain"] == "12 m"  # 1200 cm sent
        splits = rows(driver, "splits")
        assert [r[0] for r in splits] == ["1", "2", "3", "4"]
        assert [r[3] for r in splits] == ["6:15"] * 4
        zones = rows(driver, "zones")
        assert [r[0] for r in zones] == ["1", "2", "3", "4", "5"]
        assert zones[2][2] == "13:00"  # 127-140 bpm: 13 readings a minute apart
        scrolled, inner = overflow(driver)
        assert inner == pixels and scrolled <= inner, (scrolled, inner)
        ratio, cosine, plotted, tall = route_shape(driver)
        assert ratio == pytest.approx(cosine, rel=0.01)  # a degree east is cos(lat) of north
        assert 0 < plotted <= pixels
        assert tall > 0.5, tall  # across the plot (a narrow one is taller than wide), not a dot
        driver.save_screenshot(str(tmp_path / f"workout-{pixels}.png"))
        print(f"screenshot at {pixels} px: {tmp_path / f'workout-{pixels}.png'}")


@pytest.mark.parametrize("pixels", WIDTHS)
def test_the_real_walk_and_an_imperial_account(driver: Any, site: str, pixels: int) -> None:
    with width(driver, pixels):
        open_page(driver, site, f"/workouts/{quote(WALK_ID)}?account=carol")
        said = facts(driver)
        assert said["duration"] == "12:05"  # v1 sends no duration: its end less its start
        assert said["distance"] == "0.95 km"  # 0.59 mi sent
        assert said["active energy"] == "68 kcal" and said["total energy"] == "134 kcal"
        assert said["average heart rate"] == "98 bpm"
        assert said["temperature"] == "26.4 °C"  # 79.61 °F sent
        assert "No splits" in driver.find_element("id", "splits").text  # no route
        assert overflow(driver)[0] <= pixels

        open_page(driver, site, f"/workouts/{quote(RUN_ID)}?account=dave")
        said = facts(driver)
        assert said["distance"] == "1.99 mi" and said["average pace"] == "10:04 /mi"
        assert said["elevation gain"] == "39 ft"
        assert [r[1] for r in rows(driver, "splits")] == ["1", "0.99"]
        assert overflow(driver)[0] <= pixels


@pytest.mark.parametrize("pixels", WIDTHS)
def test_the_list_has_each_workouts_figures_and_the_weeks(
    driver: Any, site: str, pixels: int
) -> None:
    with width(driver, pixels):
        open_page(driver, site, "/workouts?account=carol")
        weeks = rows(driver, "weeks")
        assert weeks[0] == ["2026-03-16", "1", "20:00", "3.2", "250"]  # newest first
        assert weeks[1] == ["2026-03-09", "1", "1:00:00", "20", "500"]  # Sunday 23:30
        listed = {r[1]: r for r in rows(driver, "list")}
        assert listed["Outdoor Run"][2:5] == ["20:00", "3.2 km", "250 kcal"]
        assert listed["Walking"][2:5] == ["12:05", "0.95 km", "68 kcal"]
        assert overflow(driver)[0] <= pixels
        open_page(driver, site, "/workouts?account=dave")
        assert rows(driver, "weeks")[0][3] == "1.99"
        assert {r[1]: r[3] for r in rows(driver, "list")}["Outdoor Run"] == "1.99 mi"
