"""docs/dashboard.md's screenshots: the synthetic data set, the dashboard, headless Chromium.

    .venv/bin/python -m tests.dashboard_screenshots docs/

Same browser setup as tests/acceptance/test_dashboard.py; writes dashboard-<page>.png.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from healthlog.launcher import free_port

from tests import browser
from tests.dashboard_data import WORKOUT_ID, build

SHOTS = {
    "overview": ("/", 1080),
    "coverage": ("/coverage", 1000),
    "metric": ("/metrics/step_count", 820),
    "metric-discrete": ("/metrics/resting_heart_rate", 820),
    "sleep": ("/sleep", 760),
    "workout": (f"/workouts/{WORKOUT_ID}", 1060),
    "records": ("/records?section=ecg", 820),
    "deliveries": ("/deliveries", 720),
}


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        folded = build(folder)
        port = free_port()
        shots = {**SHOTS, "delivery": (f"/deliveries/{folded.failed_id}", 900)}
        with (
            browser.dashboard(folder, port, "--account", "alice"),
            browser.chromium(folder / "profile") as driver,
        ):
            for name, (path, height) in shots.items():
                driver.set_window_size(1280, height)
                driver.get(f"http://127.0.0.1:{port}{path}")
                browser.wait_ready(driver)
                browser.wait_painted(driver)
                target = out / f"dashboard-{name}.png"
                driver.save_screenshot(str(target))
                print(target)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
