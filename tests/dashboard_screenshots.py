"""docs/dashboard.md's screenshots: every page of the realistic account, at a desktop's
width and a phone's, in headless Chromium.

    .venv/bin/python -m tests.dashboard_screenshots docs/

The account is tests/realistic_data.py's (a year imported, two months of HAE, runs with
routes, every section), its days ending today; the browser is tests/browser.py's, as
the tests drive it. Writes dashboard-<page>.png (1280 px wide) and
dashboard-<page>-phone.png (390 px), each as tall as its page (at most ``TALLEST``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from healthlog.local.launcher import free_port

from tests import browser
from tests.realistic_data import build

#: the most CSS pixels of a page a screenshot shows, at each width
TALLEST = {browser.DESKTOP: 1500, browser.PHONE: 2400}


def shots(workout: str) -> dict[str, str]:
    return {
        "summary": "/",
        "status": "/status",
        "coverage": "/coverage",
        "metric": "/metrics/step_count",
        "metric-discrete": "/metrics/heart_rate?range=W",
        "sleep": "/sleep",
        "workouts": "/workouts",
        "workout": f"/workouts/{workout}",
        "records": "/records?section=stateOfMind",
        "deliveries": "/deliveries",
    }


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        account = build(folder)
        port = free_port()
        with (
            browser.dashboard(folder, port, "--account", "alice"),
            browser.chromium(folder / "profile") as driver,
        ):
            for size, suffix in ((browser.DESKTOP, ""), (browser.PHONE, "-phone")):
                for name, path in shots(account.workout_ids[-1]).items():
                    browser.viewport(driver, size)
                    driver.get(f"http://127.0.0.1:{port}{path}")
                    browser.wait_ready(driver)
                    browser.wait_painted(driver)
                    tall = driver.execute_script("return document.documentElement.scrollHeight")
                    browser.viewport(driver, (size[0], min(int(tall), TALLEST[size])))
                    browser.wait_painted(driver)
                    target = out / f"dashboard-{name}{suffix}.png"
                    driver.save_screenshot(str(target))
                    print(target)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
