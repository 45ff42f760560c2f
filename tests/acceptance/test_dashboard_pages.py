"""Every page on a realistic account, at a desktop's width and a phone's, in Chromium.

The account (tests/realistic_data.py): a year imported from the Health app's export,
two months of Health Auto Export deliveries with a recent gap, runs with routes, and
every other section. Each page, at 1280 x 900 and at 390 x 844, is drawn with no
console error, asks no other host, and does not scroll sideways (a table may scroll in
its own box); the summary's cards say what the read model says (issue "A dashboard a
person opens every morning", items 7 and 8).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local.launcher import free_port
from healthlog.reads import Reads

from tests import browser
from tests.browser import visit
from tests.realistic_data import Realistic, build


@dataclass
class Site:
    url: str
    account: Realistic
    folder: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("realistic")
    account = build(folder)
    port = free_port()
    with browser.dashboard(folder, port, "--account", "alice"):
        yield Site(f"http://127.0.0.1:{port}", account, folder)


def pages(site: Site) -> dict[str, str]:
    """Every page, one of each kind, and the records of each section."""
    journal = SqliteJournal(str(site.folder / "journal.db"))
    try:
        (account,) = journal.accounts()
        r = Reads(journal, account)
        sections = sorted(s for s in r.sections() if s != "workouts")
        delivery = r.deliveries(limit=1)[0].id
    finally:
        journal.close()
    return {
        "summary": "/",
        "status": "/status",
        "coverage": "/coverage",
        "metrics": "/metrics",
        "steps": "/metrics/step_count",
        "heart-rate": "/metrics/heart_rate",
        "sleep": "/sleep",
        "workouts": "/workouts",
        "workout": f"/workouts/{site.account.workout_ids[-1]}",
        "deliveries": "/deliveries",
        "delivery": f"/deliveries/{delivery}",
        **{f"records-{s}": f"/records?section={s}" for s in sections},
    }


@pytest.mark.slow
@pytest.mark.parametrize("size", [browser.DESKTOP, browser.PHONE], ids=["desktop", "phone"])
def test_every_page_fits_the_width_with_no_error_and_no_other_host(
    driver: Any, site: Site, size: tuple[int, int]
) -> None:
    browser.viewport(driver, size)
    wide: dict[str, int] = {}
    try:
        for name, path in pages(site).items():
            assert visit(driver, site.url, path, None, name) == "yes", path
            assert driver.find_element("id", "content").text, path
            if (over := browser.overflow_px(driver)) > 0:
                wide[path] = over
    finally:
        browser.viewport(driver, browser.DESKTOP)
    assert not wide, f"pages wider than {size[0]} px (by px): {wide}"


def test_the_summary_says_what_the_read_model_says(driver: Any, site: Site) -> None:
    visit(driver, site.url, "/", None, "summary")
    shown = driver.execute_script(
        "return [...document.querySelectorAll('a.glance')].map(a => ({metric: a.dataset.metric,"
        " today: a.querySelector('[data-today]').dataset.today,"
        " week: a.querySelector('[data-week]').dataset.week,"
        " trend: (a.querySelector('.trend').dataset.direction || null)}))"
    )
    journal = SqliteJournal(str(site.folder / "journal.db"))
    try:
        (account,) = journal.accounts()
        cards = Reads(journal, account).summary(site.account.today)
    finally:
        journal.close()

    def text(value: float | None) -> str:
        return "" if value is None else str(round(value, 4)).removesuffix(".0")

    expected = [
        {
            "metric": c.metric,
            "today": text(c.today),
            "week": text(c.week),
            "trend": None if c.trend is None else c.trend.direction.value,
        }
        for c in cards
    ]
    assert shown == expected
    by_metric = {c["metric"]: c for c in shown}
    # the account's story: steps rose in the last months, the trip left today alone
    assert by_metric["step_count"]["trend"] == "up"
    assert by_metric["step_count"]["today"] != ""
    assert [c["metric"] for c in shown][:4] == [
        "step_count",
        "active_energy",
        "apple_exercise_time",
        "apple_stand_hour",
    ]
    line = driver.find_element("id", "status-line")
    assert "backlog 0" in line.text
    assert line.find_element("link text", "Status").get_attribute("href").endswith("/status")


def test_a_range_is_kept_in_the_address_and_its_arrows_move_it(driver: Any, site: Site) -> None:
    """Opened on M (the last month with data, at days); W is 7 daily totals; ‹ moves a
    week back; a reload of the address reopens that same week."""
    visit(driver, site.url, "/metrics/step_count", None, "steps")
    chart = driver.find_element("id", "chart")
    pressed = driver.find_element("css selector", "button.span[aria-pressed='true']")
    assert pressed.text == "M" and chart.get_attribute("data-resolution") == "day"
    assert 25 <= int(chart.get_attribute("data-count")) <= 31  # the trip: 3 days without
    driver.find_element("css selector", "button.span[data-range='6M']").click()
    browser.wait_until(
        driver, lambda d: chart.get_attribute("data-resolution") == "week", 10, "6M not weekly"
    )
    driver.find_element("css selector", "button.span[data-range='W']").click()
    browser.wait_until(
        driver, lambda d: "range=W" in d.current_url, 10, "the range is not in the address"
    )
    browser.wait_until(
        driver, lambda d: chart.get_attribute("data-count") == "7", 10, "W is not 7 days"
    )
    assert driver.find_element("id", "later").get_attribute("disabled") is not None  # today
    before, this_week = driver.current_url, driver.find_element("id", "shown").text
    driver.find_element("id", "earlier").click()
    browser.wait_until(driver, lambda d: d.current_url != before, 10, "‹ moved nothing")
    # the address moves first; the range's text once the page has drawn it
    browser.wait_until(
        driver, lambda d: d.find_element("id", "shown").text != this_week, 10, "‹ drew nothing"
    )
    week_back = driver.current_url
    shown = driver.find_element("id", "shown").text
    driver.get(week_back)
    browser.wait_ready(driver)
    assert driver.find_element("id", "shown").text == shown
    assert driver.find_element("css selector", "button.span[aria-pressed='true']").text == "W"
    assert not browser.console_errors(driver)


def test_the_sleep_page_takes_the_same_ranges(driver: Any, site: Site) -> None:
    """Opened on the last month of nights; W is the last 7 nights, ‹ the 7 before; the
    range is in the address."""
    visit(driver, site.url, "/sleep", None, "sleep")
    pressed = driver.find_element("css selector", "button.span[aria-pressed='true']")
    assert pressed.text == "M"
    nights = "return document.querySelectorAll('#content table tbody tr').length"
    month = driver.execute_script(nights)
    assert 25 <= month <= 31  # the trip: 3 nights without
    driver.find_element("css selector", "button.span[data-range='W']").click()
    browser.wait_until(driver, lambda d: d.execute_script(nights) == 7, 10, "W is not 7 nights")
    assert "range=W" in driver.current_url
    before = driver.current_url
    driver.find_element("id", "earlier").click()
    browser.wait_until(driver, lambda d: d.current_url != before, 10, "‹ moved nothing")
    # the address moves first; the arrows are set once the page has drawn the range
    later_enabled = lambda d: d.find_element("id", "later").get_attribute("disabled") is None  # noqa: E731
    browser.wait_until(driver, later_enabled, 10, "› stays disabled after ‹")
    assert not browser.console_errors(driver)


def test_the_colours_follow_the_systems_dark_setting(driver: Any, site: Site) -> None:
    """With the system's dark setting the page and its charts are dark, with light text."""

    def luminance(css: str) -> float:
        r, g, b = (int(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255

    colours = (
        "const s = getComputedStyle(document.body);"
        "const plot = document.querySelector('.js-plotly-plot .main-svg');"
        "return [s.backgroundColor, s.color, plot ? getComputedStyle(plot).backgroundColor"
        " || plot.style.background : null]"
    )
    try:
        for scheme, dark in (("light", False), ("dark", True)):
            driver.execute_cdp_cmd(
                "Emulation.setEmulatedMedia",
                {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
            )
            visit(driver, site.url, "/metrics/step_count", None, "steps")
            background, text, chart = driver.execute_script(colours)
            assert (luminance(background) < 0.2) is dark, (scheme, background)
            assert (luminance(text) > 0.7) is dark, (scheme, text)
            assert chart is not None and (luminance(chart) < 0.2) is dark, (scheme, chart)
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
