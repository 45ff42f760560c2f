"""What the browser tests share: one headless Chromium a module (tests/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import browser


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The browser; without one a skip that says why, except in CI, where it fails."""
    why = browser.missing_browser()
    if why is not None:
        if browser.browser_required():
            pytest.fail(f"the browser tests must run in CI: {why}")
        print(f"skipping the browser tests: {why}")
        pytest.skip(why)
    with browser.chromium(tmp_path_factory.mktemp("chromium-profile")) as d:
        yield d
