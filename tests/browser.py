"""Headless Chromium through selenium, for the dashboard's tests and its docs' screenshots.

Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them). The flags
keep the browser from reaching any host of its own accord (no background networking,
component updates, sync or QUIC), so the only requests it makes are the pages'; the
performance log lists them all (``requests_made``) and the tests check their hosts.
Without the browser a test skips saying why, except in CI (``CI=true`` or
``HEALTHLOG_REQUIRE_BROWSER=1``), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
BIN = Path(sys.executable).parent
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--window-size=1280,900",
)


def browser_required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("HEALTHLOG_REQUIRE_BROWSER") == "1"


def missing_browser() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra)"
    return None


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium with a fresh profile, logging its console and its requests."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


#: the widths every page is tried at: a desktop's window and a phone's (an iPhone 14's
#: 390 x 844 CSS pixels)
DESKTOP = (1280, 900)
PHONE = (390, 844)


def viewport(driver: Any, size: tuple[int, int]) -> None:
    """Make the page's viewport ``size`` CSS pixels, a phone's touch and all for PHONE
    (Chrome's device emulation: the window's own size includes no scroll bar rules)."""
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == PHONE},
    )


def overflow_px(driver: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no sideways scroll)."""
    return int(
        driver.execute_script(
            "return Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            " - document.documentElement.clientWidth"
        )
    )


def wait_until(driver: Any, condition: Callable[[Any], Any], timeout_s: float, why: str) -> Any:
    """selenium's WebDriverWait for ``condition``: its first truthy value, else AssertionError."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.wait import WebDriverWait

    try:
        return WebDriverWait(driver, timeout_s, poll_frequency=0.05).until(condition)
    except TimeoutException:
        raise AssertionError(why) from None


def wait_ready(driver: Any, timeout_s: float = 30.0) -> str:
    """Wait until the page's JS has drawn it (``body[data-ready]``); its value."""
    ready = wait_until(
        driver,
        lambda d: d.execute_script("return document.body && document.body.dataset.ready"),
        timeout_s,
        f"{driver.current_url} was not drawn within {timeout_s:.0f} s",
    )
    return str(ready)


def wait_painted(driver: Any) -> None:
    """Wait for the browser to paint twice: what the page drew last (plotly's final frame,
    a chart drawn from a timer) is on the screen, for a screenshot or the console log."""
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "requestAnimationFrame(() => requestAnimationFrame(() => done()));"
    )


def console_errors(driver: Any) -> list[str]:
    """The console's errors since the last call (CSP violations and failed loads included)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def requests_made(driver: Any) -> list[str]:
    """Every URL the browser asked for since the last call (the performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


#: ``healthlog`` with modules made unimportable (None in sys.modules), as if not installed
WITHOUT = (
    "import sys; sys.modules.update(dict.fromkeys(sys.argv.pop(1).split(',')));"
    " from healthlog.cli import main; sys.exit(main(sys.argv[1:]))"
)


@contextmanager
def dashboard(
    folder: Path, port: int, *args: str, without: tuple[str, ...] = ()
) -> Iterator[subprocess.Popen[bytes]]:
    """``healthlog dashboard`` on 127.0.0.1:port over the journal and archive in ``folder``
    (its output in ``folder/dashboard-<port>.log``); ``without``: modules it cannot import."""
    from healthlog.local import launcher

    env = launcher.clean_env(
        {
            "HEALTHLOG_JOURNAL_URL": f"sqlite:///{folder}/journal.db",
            "HEALTHLOG_ARCHIVE_URL": f"file://{folder}/archive",
            "HEALTHLOG_LOG_LEVEL": "DEBUG",
        }
    )
    log = (folder / f"dashboard-{port}.log").open("wb")
    command = [str(BIN / "healthlog")]
    if without:
        command = [sys.executable, "-c", WITHOUT, ",".join(without)]
    process = subprocess.Popen(
        [*command, "dashboard", "--port", str(port), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        launcher.wait_listening(process, "127.0.0.1", port)
        yield process
    finally:
        launcher.stop(process)
        log.close()


def visit(driver: Any, site_url: str, path: str, shots: Path | None, name: str) -> str:
    """Open a page, wait until drawn; assert no console error and no foreign request."""
    console_errors(driver)  # drop what came before
    requests_made(driver)
    driver.get(site_url + path)
    ready = wait_ready(driver)
    wait_painted(driver)  # plotly's last frame
    errors = console_errors(driver)
    assert not errors, f"{path}: console errors {errors}"
    here = urlsplit(site_url).netloc
    foreign = [u for u in requests_made(driver) if not own(u, here)]
    assert not foreign, f"{path} asked other hosts: {foreign}"
    if shots is not None:
        shot = shots / f"{name}.png"
        driver.save_screenshot(str(shot))
        print(f"screenshot of {path}: {shot}")
    return ready


def own(url: str, netloc: str) -> bool:
    """Whether ``url`` stays on the dashboard (``netloc``) or on the page itself."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True  # never leaves the page
    return parts.scheme == "http" and parts.netloc == netloc
