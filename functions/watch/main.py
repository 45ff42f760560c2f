"""The watch function: one evaluation of the watch's rules per invocation.

A thin adapter over ``healthlog.ops.watch.Watcher``, like the fold's: the settings (the
journal URL from its SSM parameter) and the journal are opened once per process (cold
start); ``handler`` is the Lambda entry point (an EventBridge schedule, template.yaml's
``WatchFunction``), ``watch`` the functions-framework target. Notices go through
``healthlog.ops.watch_aws.send``: the stack's SNS topic (``sns-topic://<ARN>`` in
``HEALTHLOG_NOTIFY_URLS``), apprise for any other URL where apprise is installed.

Each target is told once when a rule starts to hold and once when it stops; what each
was told is in the journal, so a run that finds nothing new sends nothing. A target that
is down is logged and tried again at the next run; it never makes the run fail. The log
line ``watch.run`` carries counts only: no rule's text, no account, no URL.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from healthlog import log
from healthlog.config import Settings
from healthlog.journal.port import Journal
from healthlog.ops import secrets, watch_aws
from healthlog.ops.watch import Report, Watcher

logger = logging.getLogger("healthlog.watch")


@functools.cache
def _settings() -> Settings:
    return secrets.resolve(Settings.from_env())


@functools.cache
def _journal() -> Journal:
    from healthlog.ops import wiring

    settings = _settings()
    log.setup(settings.log_level)
    journal = wiring.open_journal(settings)
    journal.migrate()
    return journal


def counts(report: Report) -> dict[str, int]:
    """What a run logs and answers: how many rules hold, notices sent and not sent."""
    return {
        "holds": len(report.found),
        "sent": len(report.sent),
        "failed": len(report.failed),
        "targets": report.targets,
    }


def run() -> dict[str, int]:
    """One evaluation, its notices told; the counts, logged."""
    report = Watcher(_journal(), _settings(), send=watch_aws.send).run()
    found = counts(report)
    level = logging.WARNING if report.failed else logging.INFO
    log.event(logger, level, "watch.run", **found)
    return found


def watch(request: Any) -> tuple[str, int, dict[str, str]]:
    """functions-framework target: ``POST /`` runs one evaluation, answers its counts."""
    headers = {"Content-Type": "application/json"}
    if request.path != "/":
        return json.dumps({"error": "not found"}), 404, headers
    if request.method != "POST":
        return json.dumps({"error": "POST only"}), 405, {**headers, "Allow": "POST"}
    return json.dumps(run()), 200, headers


def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    """Lambda: a scheduled event (its content does not matter); the run's counts."""
    return run()
