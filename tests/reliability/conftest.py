"""Figures the reliability tests measure, printed at the end of the session.

pytest keeps a passing test's stdout to itself, so a test that has figures worth
quoting (kills, deliveries, outcomes, throughput, latency) hands them to the
``figures`` fixture: they are printed in a "reliability figures" section of the
terminal summary, attached to the test's JUnit properties, and written to
``reliability-figures.json`` in the session's temporary folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

# S3 on moto's server, for the fault tests of the S3 adapter under ingest and the fold
from tests.integration.conftest import (  # noqa: F401
    dummy_aws_env,
    s3_bucket,
    s3_client,
    s3_endpoint,
)

_FIGURES: list[tuple[str, dict[str, Any]]] = []

Figures = Callable[..., None]


@pytest.fixture
def figures(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Figures:
    """``figures(kills=12, deliveries=300)``: record what this test measured."""

    def record(**values: Any) -> None:
        name = request.node.nodeid
        _FIGURES.append((name, values))
        for key, value in values.items():
            request.node.user_properties.append((key, value))
        out = tmp_path_factory.getbasetemp() / "reliability-figures.json"
        out.write_text(json.dumps({n: v for n, v in _FIGURES}, indent=2, default=str))
        print(f"{name}: {values}")

    return record


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _FIGURES:
        return
    terminalreporter.section("reliability figures")
    for name, values in _FIGURES:
        terminalreporter.write_line(name)
        for key, value in values.items():
            terminalreporter.write_line(f"    {key}: {value}")
