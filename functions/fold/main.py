"""The fold function: one pass over the pending deliveries per invocation.

A thin adapter: dependencies are built once per process (cold start); the
functions-framework target ``fold`` serves the local stack's tick and ingest's wake-up
bit; ``handler`` is the Lambda entry point (EventBridge schedule or async invoke).

In Lambda a pass stops claiming work while there is still time to finish the delivery
in hand: the margin is one delivery's own deadline plus ``LAMBDA_MARGIN_S`` to write its
outcome, so the pass ends cleanly before Lambda would kill it. Template.yaml's Timeout
must exceed that margin (a test checks it). Running out of time is a WARN from the pass
(``fold.pass`` with ``"stopped": "budget"``), never an error: what is left stays
``pending`` for the next tick.
"""

from __future__ import annotations

import functools
import hmac
import json
import logging
from typing import Any

from healthlog import log
from healthlog.config import WAKE_HEADER, Settings
from healthlog.fold.service import FoldService
from healthlog.ops import secrets

# on top of one delivery's deadline: the time to write its outcome and return
LAMBDA_MARGIN_S = 10.0


@functools.cache
def _service() -> FoldService:
    from healthlog.ops import wiring

    settings = _settings()
    log.setup(settings.log_level)
    journal = wiring.open_journal(settings)
    journal.migrate()
    return FoldService(journal, wiring.open_archive(settings), settings)


@functools.cache
def _settings() -> Settings:
    return secrets.resolve(Settings.from_env())


def fold(request: Any) -> tuple[str, int, dict[str, str]]:
    """functions-framework target: run a pass within the configured budget.

    ``?wait=1`` waits for a running pass to end and runs one after it (synchronous);
    without it a request during a pass returns 202 at once and the pass goes round again.
    """
    refused = _refusal(request)
    if refused is not None:
        return refused
    service = _service()
    budget = _settings().pass_budget_s
    wait = request.args.get("wait") not in (None, "", "0")
    report = service.run(budget_s=budget, wait_s=budget if wait else 0)
    headers = {"Content-Type": "application/json"}
    if report is None:
        return json.dumps({"running": True}), 202, headers
    return json.dumps(report.as_dict()), 200, headers


def _refusal(request: Any) -> tuple[str, int, dict[str, str]] | None:
    """A reply for what is not a wake-up: another method or path, or no secret.

    The local stack's fold listens on 127.0.0.1, where any local process could ask it to
    fold in a loop; ``healthlog serve`` gives it a secret (``HEALTHLOG_FOLD_SECRET``)
    that its tick and ingest's wake-ups carry, compared in constant time.
    """
    headers = {"Content-Type": "application/json"}
    if request.path != "/":
        return json.dumps({"error": "not found"}), 404, headers
    if request.method != "POST":
        return json.dumps({"error": "POST only"}), 405, {**headers, "Allow": "POST"}
    secret = _settings().fold_secret
    given = request.headers.get(WAKE_HEADER, "")
    if secret and not hmac.compare_digest(given.encode(), secret.encode()):
        return json.dumps({"error": "a wake-up without the stack's secret"}), 401, headers
    return None


def lambda_margin_s(settings: Settings) -> float:
    """How long before the invocation's end a Lambda pass stops claiming deliveries."""
    return settings.fold_deadline_s + LAMBDA_MARGIN_S


#: the daily schedule's input (template.yaml): reconcile instead of a pass
RECONCILE_EVENT = {"healthlog": "reconcile"}
#: the days of bodies a scheduled reconcile looks at (today and yesterday, UTC)
RECONCILE_DAYS = 2


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda: a scheduled tick or ingest's async wake-up; both mean "run a pass".

    An EventBridge "Scheduled Event" and the wake-up's ``{"source": "healthlog.ingest"}``
    ask for the same thing, since the work is the journal's pending rows. ``None`` from
    the service (another pass holds the journal's fold lock) becomes
    ``{"running": true}``. The daily schedule's ``{"healthlog": "reconcile"}`` journals
    the bodies of the last two days that a crash left archived without a row (the
    bucket's lifecycle rule, not this, aborts incomplete uploads).
    """
    if isinstance(event, dict) and event.get("healthlog") == RECONCILE_EVENT["healthlog"]:
        from healthlog.ops import reconcile

        service = _service()
        found = reconcile.reconcile(
            service.journal, service.archive, sweep_age_s=None, recent_days=RECONCILE_DAYS
        )
        log.event(logging.getLogger("healthlog.reconcile"), logging.INFO, "reconcile.done",
                  **found.as_dict())  # fmt: skip
        return {"reconciled": found.as_dict()}
    service = _service()
    report = service.run(
        time_left=lambda: context.get_remaining_time_in_millis() / 1000.0,
        margin_s=lambda_margin_s(_settings()),
    )
    return {"running": True} if report is None else report.as_dict()
