"""The Coverage page in a real browser, for an account as a new user has it (issue 21,
item 3): two months of HAE, a year imported, twenty metrics (``tests.coverage_data``).

Headless Chromium (tests/browser.py) over `healthlog dashboard`: at its default range
(the last 90 days of data) the page is under three screen heights on a laptop and on a
phone; the calendar opens on the most recent days, its month labels scroll with its
cells in one container and never overlap; the recent 3-day gap is drawn, the one late
sample is summed, not listed a row a day; the presets and the form put the range in the
URL, and a link to it reopens the same view.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from healthlog.local.launcher import free_port

from tests import browser, coverage_data

SCREENS = [(1280, 900), (390, 844)]
STEP_CELLS = ".metric-block[data-metric='step_count'] .calendar a"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("coverage-data")
    coverage_data.build(folder)
    port = free_port()
    with browser.dashboard(folder, port, "--account", "alice"):
        yield f"http://127.0.0.1:{port}"


def screen(driver: Any, width: int, height: int) -> None:
    """The page's viewport exactly ``width`` × ``height`` CSS pixels (a phone's: mobile)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def open_page(driver: Any, url: str) -> None:
    browser.console_errors(driver)
    driver.get(url)
    assert browser.wait_ready(driver) == "yes"
    assert not browser.console_errors(driver)


@pytest.fixture
def laptop(driver: Any) -> Iterator[Any]:
    screen(driver, *SCREENS[0])
    yield driver
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.parametrize(("width", "height"), SCREENS)
def test_the_page_at_its_default_range_is_under_three_screens(
    driver: Any, site: str, width: int, height: int, tmp_path: Path
) -> None:
    screen(driver, width, height)
    try:
        open_page(driver, site + "/coverage")
        inner, tall = driver.execute_script(
            "return [window.innerHeight, document.documentElement.scrollHeight]"
        )
        assert inner == height
        driver.save_screenshot(str(tmp_path / f"coverage-{width}.png"))
        assert tall < 3 * height, f"{tall} px at {width}×{height}"
        rows = driver.find_elements("css selector", ".metric-block[data-metric]")
        assert len(rows) == 20
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_calendar_opens_on_the_latest_days_its_labels_move_with_it(
    laptop: Any, site: str
) -> None:
    driver = laptop
    open_page(driver, site + "/coverage")
    box = driver.find_element("id", "calendar")
    left, width, inside = driver.execute_script(
        "const b = arguments[0]; return [b.scrollLeft, b.scrollWidth, b.clientWidth]", box
    )
    assert left > 0 and left + inside >= width - 1  # scrolled to its right end
    # labels and cells have one scroll container: the calendar's
    nearest = """
        let n = arguments[0].parentElement;
        const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
        while (n && !scrolls(n)) n = n.parentElement;
        return n && n.id;"""
    label = driver.find_element("css selector", "#calendar .months span")
    cell = driver.find_element(
        "css selector", ".metric-block[data-metric='step_count'] .calendar a"
    )
    assert driver.execute_script(nearest, label) == "calendar"
    assert driver.execute_script(nearest, cell) == "calendar"
    texts = [s.text for s in driver.find_elements("css selector", "#calendar .months span")]
    assert texts == ["Sep 2026", "Oct", "Nov"]  # the range's 90 days: 2 Sep to 30 Nov
    before = {
        s.text: s.rect["x"] - cell.rect["x"]
        for s in driver.find_elements("css selector", "#calendar .months span")
    }
    driver.execute_script("arguments[0].scrollLeft = 0", box)
    after = {
        s.text: s.rect["x"] - cell.rect["x"]
        for s in driver.find_elements("css selector", "#calendar .months span")
    }
    assert after == pytest.approx(before, abs=1)  # they moved with the cells


@pytest.mark.parametrize("days", ["90", "182", "365", "all"])
def test_month_labels_never_overlap(laptop: Any, site: str, days: str) -> None:
    driver = laptop
    open_page(driver, site + f"/coverage?days={days}")
    spans = driver.find_elements("css selector", "#calendar .months span")
    assert spans
    boxes = sorted((s.rect["x"], s.rect["x"] + s.rect["width"]) for s in spans)
    for (_, end), (start, _) in itertools.pairwise(boxes):
        assert end <= start, boxes


def test_the_gap_is_drawn_and_late_samples_are_summed(laptop: Any, site: str) -> None:
    driver = laptop
    open_page(driver, site + "/coverage")
    block = driver.find_element("css selector", ".metric-block[data-metric='step_count']")
    gaps = {c.get_attribute("data-day") for c in block.find_elements("css selector", "a.gap")}
    assert gaps == {"2026-11-10", "2026-11-11", "2026-11-12"}
    late = driver.find_elements("css selector", ".calendar a.late")
    assert [c.get_attribute("data-day") for c in late] == [coverage_data.LATE.date().isoformat()]
    row = driver.find_element("css selector", ".coverage-table tr[data-metric='heart_rate']")
    summary = row.find_element("css selector", "details.late summary")
    assert summary.text == "1 sample, 1 day"
    assert len(driver.find_elements("css selector", ".coverage-table details.late")) == 1
    summary.click()
    listed = row.find_element("css selector", "details.late table").text
    assert "2026-11-29" in listed
    steps = driver.find_element("css selector", ".coverage-table tr[data-metric='step_count']")
    assert steps.find_element("css selector", "details.gaps summary").text == "1 gap, 3 days"


def test_the_range_is_in_the_url_and_a_link_reopens_it(laptop: Any, site: str) -> None:
    driver = laptop
    open_page(driver, site + "/coverage")
    active = driver.find_element("css selector", ".coverage-range a.preset.active")
    assert active.get_attribute("data-days") == "90"
    assert driver.find_element("id", "range-from").get_attribute("value") == "2026-09-02"
    driver.find_element("css selector", ".coverage-range a[data-days='365']").click()
    browser.wait_until(driver, lambda d: "days=365" in d.current_url, 30, "no days=365")
    assert browser.wait_ready(driver) == "yes"
    assert driver.find_element("id", "range-from").get_attribute("value") == "2025-12-01"
    cells = driver.find_elements("css selector", STEP_CELLS)
    assert len(cells) == 365
    # the form: two days, both in; the URL gets the API's half-open range
    for name, value in (("range-from", "2026-11-01"), ("range-to", "2026-11-15")):
        field = driver.find_element("id", name)
        driver.execute_script("arguments[0].value = arguments[1]", field, value)
    driver.find_element("css selector", ".range-form button").click()
    browser.wait_until(driver, lambda d: "start=" in d.current_url, 30, "no start= in the URL")
    assert browser.wait_ready(driver) == "yes"
    query = parse_qs(urlsplit(driver.current_url).query)
    assert (query["start"], query["end"]) == (["2026-11-01"], ["2026-11-16"])
    link = driver.current_url
    shown = [c.get_attribute("data-day") for c in driver.find_elements("css selector", STEP_CELLS)]
    assert (shown[0], shown[-1], len(shown)) == ("2026-11-01", "2026-11-15", 15)
    open_page(driver, link)  # the link reopens the same view
    again = driver.find_elements(
        "css selector", ".metric-block[data-metric='step_count'] .calendar a"
    )
    assert [c.get_attribute("data-day") for c in again] == shown
    assert not driver.find_elements("css selector", ".coverage-range a.preset.active")
