"""The dashboard's ``/prometheus``: healthlog's state in Prometheus' text format.

Read from the journal at each scrape (a collector of ``prometheus_client``, whose text
writer and parser are Prometheus' own), never kept in memory between two: the
deliveries per status, the backlog and its oldest delivery's age, each account's last
delivery's age, its failures by class and points in the showcase, how long its latest
deliveries waited to be folded, and the watch's rules that hold (``healthlog.ops.watch``).
Names and counts only: an account's name is a label, never a health value, a source
name or a token. docs/operations.md, "The watch".

It is served on the dashboard's port only (never on ingest's), under the dashboard's own
rules: on loopback without sign-in it shows every account (or the one the dashboard is
fixed to); with sign-in, the signed-in account's alone, and nothing of the journal's as
a whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from healthlog import ids
from healthlog.config import Settings
from healthlog.journal.port import ShowcaseReads
from healthlog.model import Account
from healthlog.ops import watch

#: what a scrape is answered with
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: the deliveries the fold lag is measured over, per account (the newest)
LAG_DELIVERIES = 100


class JournalCollector(Collector):
    """One scrape's metrics, read from the journal for ``accounts()``; with ``whole``,
    the journal's own too (the backlog, the watch's rules of the whole journal)."""

    def __init__(
        self,
        journal: ShowcaseReads,
        accounts: Callable[[], Sequence[Account]],
        *,
        whole: bool,
        settings: Settings | None,
        now: Callable[[], datetime] = ids.now,
    ) -> None:
        self._journal = journal
        self._accounts = accounts
        self._whole = whole
        self._settings = settings
        self._now = now

    def collect(self) -> Iterator[Metric]:
        now = self._now()
        accounts = list(self._accounts())
        deliveries = GaugeMetricFamily(
            "healthlog_deliveries", "Deliveries per status.", labels=["account", "status"]
        )
        failed = GaugeMetricFamily(
            "healthlog_failed_deliveries",
            "Failed deliveries per failure class.",
            labels=["account", "failure"],
        )
        last = GaugeMetricFamily(
            "healthlog_last_delivery_age_seconds",
            "Seconds since the account's last delivery was received.",
            labels=["account"],
        )
        points = GaugeMetricFamily(
            "healthlog_showcase_points", "Points in the account's showcase.", labels=["account"]
        )
        for account in accounts:
            summary = self._journal.summary(account.id)
            for status, count in sorted(summary.counts.items()):
                deliveries.add_metric([account.name, status], count)
            for failure, count in sorted(summary.failures.items()):
                failed.add_metric([account.name, failure], count)
            if summary.last_delivery is not None:
                last.add_metric([account.name], (now - summary.last_delivery).total_seconds())
            points.add_metric([account.name], summary.points)
        lag = GaugeMetricFamily(
            "healthlog_fold_lag_seconds",
            f"Seconds from receipt to fold of the account's last {LAG_DELIVERIES} deliveries"
            " folded: the largest, and the median.",
            labels=["account", "quantile"],
        )
        for account in accounts:
            waits = sorted(
                (d.folded_at - d.received_at).total_seconds()
                for d in self._journal.deliveries(
                    account_id=account.id, limit=LAG_DELIVERIES, newest_first=True
                )
                if d.folded_at is not None
            )
            if waits:
                lag.add_metric([account.name, "0.5"], waits[len(waits) // 2])
                lag.add_metric([account.name, "1"], waits[-1])
        yield from (deliveries, failed, last, points, lag)
        if self._whole:
            whole = self._journal.summary()
            yield GaugeMetricFamily(
                "healthlog_backlog", "Deliveries waiting to be folded.", value=whole.backlog
            )
            age = (
                0.0
                if whole.oldest_pending is None
                else (now - whole.oldest_pending).total_seconds()
            )
            yield GaugeMetricFamily(
                "healthlog_backlog_oldest_age_seconds",
                "Seconds the oldest delivery waiting to be folded has waited (0: none).",
                value=age,
            )
        if self._settings is not None:
            holding = GaugeMetricFamily(
                "healthlog_watch_rule_holds",
                "How many of the watch's findings of a rule hold (healthlog status --check).",
                labels=["rule", "account"],
            )
            names = {a.name for a in accounts}
            held: Counter[tuple[str, str]] = Counter()
            for found in watch.evaluate(self._journal, self._settings, now):
                if found.account is None and not self._whole:
                    continue  # a rule of the whole journal: not a signed-in account's
                if found.account is not None and found.account not in names:
                    continue
                held[(found.rule, found.account or "")] += 1
            for (rule, who), count in sorted(held.items()):
                holding.add_metric([rule, who], count)
            yield holding
