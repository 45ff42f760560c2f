"""The fold function: one pass over the pending deliveries per invocation.

A thin adapter: dependencies are built once per process (cold start); the
functions-framework target ``fold`` serves the local stack's tick and ingest's wake-up
bit; ``handler`` is the Lambda entry point (EventBridge schedule or async invoke).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from healthlog import log
from healthlog.config import Settings
from healthlog.fold.service import FoldService

# a Lambda pass stops claiming work this long before the invocation would be killed
LAMBDA_MARGIN_S = 10.0


@functools.cache
def _service() -> FoldService:
    from healthlog import wiring

    settings = _settings()
    log.setup(settings.log_level)
    journal = wiring.open_journal(settings)
    journal.migrate()
    return FoldService(journal, wiring.open_archive(settings), settings)


@functools.cache
def _settings() -> Settings:
    return Settings.from_env()


def fold(request: Any) -> tuple[str, int, dict[str, str]]:
    """functions-framework target: run a pass within the configured budget.

    ``?wait=1`` waits for a running pass to end and runs one after it (synchronous);
    without it a request during a pass returns 202 at once and the pass goes round again.
    """
    service = _service()
    budget = _settings().pass_budget_s
    wait = request.args.get("wait") not in (None, "", "0")
    report = service.run(budget_s=budget, wait_s=budget if wait else 0)
    headers = {"Content-Type": "application/json"}
    if report is None:
        return json.dumps({"running": True}), 202, headers
    return json.dumps(report.as_dict()), 200, headers


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda: a scheduled tick or ingest's async wake-up; both mean "run a pass"."""
    service = _service()
    report = service.run(
        time_left=lambda: context.get_remaining_time_in_millis() / 1000.0,
        margin_s=LAMBDA_MARGIN_S,
    )
    return {"running": True} if report is None else report.as_dict()
