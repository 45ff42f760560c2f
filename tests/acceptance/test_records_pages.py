"""The Records and Sleep pages in headless Chromium, 1280 and 390 px wide, over
tests.records_data's journal: each section's page shows the fields it sent (a state of
mind's labels, a medication's status, a notification's source by name, ...), the sleep
page its distinct columns, the 7- and 30-day figures and bars that stay wide over sparse
nights; no page is wider than the window (a wide table scrolls in its own box)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from healthlog.local.launcher import free_port

from tests import browser
from tests.acceptance.test_dashboard import visit
from tests.records_data import build

#: the widths the pages are looked at: a laptop's and a phone's
WIDTHS = (1280, 390)

#: section -> what its page must show: header labels, then cell texts
SHOWN: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "stateOfMind": (
        ("Kind", "Valence", "Labels", "Associations", "Valence classification"),
        ("content, grateful", "family, fitness", "very_pleasant", "daily_mood", "-0.3"),
    ),
    "medications": (("Medication", "Status", "Dose"), ("Genommen", "Skipped", "Ibuprofen 200 mg")),
    "symptoms": (("Symptom", "Severity"), ("Kopfschmerzen", "Leicht", "Moderate")),
    "cycleTracking": (("Type", "Value", "Cycle start"), ("Positivo", "Medium", "yes")),
    "ecg": (("Classification", "Average heart rate"), ("Sinusrhythmus", "64 bpm")),
    "heartRateNotifications": (
        ("Notification", "Threshold", "Heart rate"),
        ("Apple Watch", "Ada’s Apple Watch", "124, 127 bpm", "120 bpm"),
    ),
    "heartbeatSeries": (("Beats (time since the first)",), ("0, 0.906 s", "41.2 ms")),
}

TABLE = (
    "const t = document.querySelector('#content table');"
    "return {head: [...t.querySelectorAll('thead th')].map(th => th.textContent),"
    " rows: [...t.querySelectorAll('tbody tr')]"
    ".map(tr => [...tr.cells].map(td => td.textContent))};"
)
OVERFLOW = "return [document.documentElement.scrollWidth, window.innerWidth]"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("records-pages")
    build(folder)
    port = free_port()
    with browser.dashboard(folder, port, "--account", "carol"):
        yield f"http://127.0.0.1:{port}"


def wide(driver: Any, width: int) -> None:
    """The page as a screen ``width`` CSS pixels wide shows it (a phone's: 390)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def no_overflow(driver: Any, page: str) -> None:
    scroll, inner = driver.execute_script(OVERFLOW)
    assert scroll <= inner, f"{page}: {scroll} px wide in a {inner} px window"


@pytest.mark.parametrize("width", WIDTHS)
def test_each_sections_page_shows_the_fields_it_sent(
    driver: Any, site: str, width: int, tmp_path: Path
) -> None:
    wide(driver, width)
    try:
        for section, (headers, cells) in SHOWN.items():
            page = f"/records?section={section}"
            assert visit(driver, site, page, tmp_path, f"{section}-{width}") == "yes"
            assert driver.execute_script("return window.innerWidth") == width
            table = driver.execute_script(TABLE)
            assert table["head"][0] == "Time" and table["head"][-1] == "Source", table["head"]
            assert set(headers) <= set(table["head"]), (section, table["head"])
            assert len(table["head"]) == len(set(table["head"])), table["head"]
            text = [cell for row in table["rows"] for cell in row]
            for wanted in cells:
                assert any(wanted in cell for cell in text), (section, wanted, table["rows"])
            sources = [row[-1] for row in table["rows"]]
            assert not any(s.startswith(("{", ",")) for s in sources), (section, sources)
            no_overflow(driver, page)
        # a symptom sent with an empty source: "–", not an empty cell or a comma
        visit(driver, site, "/records?section=symptoms", None, "")
        rows = driver.execute_script(TABLE)["rows"]
        fatigue = next(r for r in rows if "Fatigue" in r)
        assert fatigue[-1] == "–"
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sleep_page_shows_its_figures_and_readable_bars(
    driver: Any, site: str, width: int, tmp_path: Path
) -> None:
    wide(driver, width)
    try:
        assert visit(driver, site, "/sleep", tmp_path, f"sleep-{width}") == "yes"
        table = driver.execute_script(TABLE)
        head = table["head"]
        assert len(head) == len(set(head)), head
        for name in ("In bed (h)", "Asleep (h)", "Core (h)", "Deep (h)", "REM (h)",
                     "Awake (h)", "Bedtime", "Wake time", "7-day average (h)"):  # fmt: skip
            assert name in head, head
        first = dict(zip(head, table["rows"][0], strict=True))  # the newest night
        assert (first["Night"], first["Bedtime"], first["Wake time"]) == (
            "2026-09-07", "22:30", "06:00",
        )  # fmt: skip
        figures = driver.execute_script("return document.getElementById('figures').textContent")
        assert "Last 7 days · 5 nights" in figures and "Last 30 days · 6 nights" in figures
        assert "Bedtime 23:18 (± 41 min)" in figures and "Wake time 06:48 (± 41 min)" in figures
        chart = driver.execute_script(
            "const p = document.getElementById('chart');"
            "return {axis: p._fullLayout.xaxis.type, names: p.data.map(t => t.name),"
            " widths: [...p.querySelectorAll('.bars path')].map(b => b.getBBox().width)}"
        )
        assert chart["axis"] == "category"  # a night a category, however far apart
        assert "7-day average asleep" in chart["names"]
        assert chart["widths"] and min(chart["widths"]) >= 8, chart["widths"]
        no_overflow(driver, "/sleep")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
