"""The watch: rules over what the journal already knows, that tell when deliveries stop.

Each rule is a pure function of the journal's facts (an account's last delivery, its
failures by class, its metrics' days, the backlog, a disk's free space) and the
settings' thresholds (``HEALTHLOG_WATCH_*``; 0 turns a rule off), and gives a
``Finding`` while it holds. ``evaluate`` gathers them for every account. A finding's
texts carry only the rule, the account's name, a metric's name, times and counts: never a
health value, a source name, a header or a token. Each says what to do.

docs/operations.md, "The watch". Not yet: a rule on repeated 401s per account (ingest
refuses an unknown token before it knows an account, and records nothing per account).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from healthlog import ids, urls
from healthlog.clock import zone_named
from healthlog.config import Settings
from healthlog.fold.classify import CRASHED
from healthlog.journal.port import Journal, Summary
from healthlog.model import Account
from healthlog.terminal import shown

#: the days of coverage the silent-metric rule reads: a metric counts as daily on these
#: (``reads.DAILY_SHARE`` of their days with data), and one silent for longer drops out
COVERAGE_WINDOW_DAYS = 90

NO_DELIVERY = "no_delivery"
SILENT_METRIC = "silent_metric"
FAILED = "failed"
PARTIAL = "partial"
BACKLOG = "backlog"
DISK = "disk"
RULES = (NO_DELIVERY, SILENT_METRIC, FAILED, PARTIAL, BACKLOG, DISK)

#: what to do, per rule (and per failure class): the app's setting, a replay, an export
_NO_DELIVERY_ADVICE = (
    "Open Health Auto Export on the phone: check that the REST API automation is on, its"
    " URL and Authorization header are this server's, and Background App Refresh is"
    " allowed; an iOS update or a locked phone can stop it. Then send the missed range"
    " with the automation's Manual Export (`healthlog coverage` shows the gaps)."
)
_SILENT_ADVICE = (
    "Check that the metric is still selected in the REST API automation and that the"
    " Health app still records it; then send its missed days with the automation's"
    " Manual Export for that range (points already here are replaced, never doubled)."
)
_FAILED_ADVICE = {
    "unreadable": "The bodies are not JSON the parser reads: `healthlog deliveries"
    " --status failed` lists them; after a fix, `healthlog replay --status failed`.",
    "deadline": "They did not fold within HEALTHLOG_FOLD_DEADLINE_S: raise it, then"
    " `healthlog replay --status failed`.",
    CRASHED: "Their folds killed the process: report the delivery ids; after the fix,"
    " `healthlog replay --failure crashed`.",
    "missing_body": "The archive lacks their bodies: restore them, then"
    " `healthlog replay --status failed`.",
}
_FAILED_DEFAULT = (
    "`healthlog deliveries --status failed` lists them; once the cause is fixed,"
    " `healthlog replay --status failed` folds them again."
)
_PARTIAL_ADVICE = (
    "Some sections are not covered by this parser yet; they are kept in the archive and"
    " folded when a release covers them (`healthlog deliveries --status partial`)."
)
_BACKLOG_ADVICE = (
    "The fold is not keeping up or not running: check that `healthlog serve` (or the fold"
    " function) is up and look for fold.lagging in its log; `healthlog fold` runs a pass."
)
_DISK_ADVICE = (
    "Free space on that disk, or move the journal or the archive to a larger one;"
    " `healthlog retention --older-than 90d` removes old parsed bodies from the archive."
)


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule that holds: its key (one per rule, account and subject), its texts."""

    key: str
    rule: str
    account: str | None  # the account's name; None for a rule of the whole journal
    line: str  # one line: what holds, with times and counts
    advice: str  # what to do

    @property
    def subject(self) -> str:
        """``rule account`` (and the metric or class): a notice's title."""
        who = f" {shown(self.account)}" if self.account is not None else ""
        return f"healthlog {self.rule}{who}"

    def check_line(self) -> str:
        """``status --check``'s line: the rule, the account, what holds."""
        return f"{self.subject.removeprefix('healthlog ')}: {self.line}"

    def text(self) -> str:
        return f"{self.line}\n\n{self.advice}"

    def as_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "rule": self.rule,
            "account": self.account,
            "line": self.line,
            "advice": self.advice,
        }


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def _hours(span: timedelta) -> str:
    hours = span.total_seconds() / 3600
    return f"{hours:.0f} h" if hours >= 10 else f"{hours:.1f} h"


# --- the rules: pure functions ---------------------------------------------------------------


def no_delivery(
    account: Account, last: datetime | None, now: datetime, hours: float
) -> Finding | None:
    """No delivery for ``hours`` (since the account was made, if it never had one)."""
    if hours <= 0:
        return None
    since = last if last is not None else account.created_at
    if now - since < timedelta(hours=hours):
        return None
    what = f"last one {_when(last)}" if last is not None else "none since the account was made"
    line = f"no delivery for {_hours(now - since)} ({what}); the limit is {hours:g} h"
    return Finding(f"{NO_DELIVERY}:{account.id}", NO_DELIVERY, account.name, line,
                   _NO_DELIVERY_ADVICE)  # fmt: skip


class MetricDays(NamedTuple):
    """Of one metric: its last local day with data, and whether it arrived daily."""

    metric: str
    last_day: str
    daily: bool


def silent_metrics(
    account: Account, metrics: Iterable[MetricDays], today: date, days: int
) -> list[Finding]:
    """Each metric that arrived daily and has no data for ``days`` days up to ``today``."""
    if days <= 0:
        return []
    found = []
    for m in metrics:
        silent = (today - date.fromisoformat(m.last_day)).days
        if m.daily and silent >= days:
            line = (
                f"{shown(m.metric)}, which arrived daily, has no data for {silent} days"
                f" (last day with data {m.last_day}); the limit is {days} days"
            )
            key = f"{SILENT_METRIC}:{account.id}:{m.metric}"
            found.append(Finding(key, SILENT_METRIC, account.name, line, _SILENT_ADVICE))
    return found


def failures(account: Account, summary: Summary) -> list[Finding]:
    """One finding per failure class of the account's ``failed`` deliveries, and one for
    its ``partial`` ones: a class holds while any delivery of it is left."""
    found = []
    for failure, count in sorted(summary.failures.items(), key=lambda kv: kv[0] or ""):
        if count <= 0:
            continue
        name = failure or "-"
        line = f"{count} deliveries failed ({shown(name)})"
        advice = _FAILED_ADVICE.get(name, _FAILED_DEFAULT)
        key = f"{FAILED}:{account.id}:{name}"
        found.append(Finding(key, f"{FAILED} {shown(name)}", account.name, line, advice))
    partial = summary.counts.get(PARTIAL, 0)
    if partial > 0:
        line = f"{partial} deliveries folded in part (partial)"
        found.append(Finding(f"{PARTIAL}:{account.id}", PARTIAL, account.name, line,
                             _PARTIAL_ADVICE))  # fmt: skip
    return found


def backlog(
    oldest_pending: datetime | None, count: int, now: datetime, minutes: float
) -> Finding | None:
    """The oldest pending delivery has waited ``minutes`` or more."""
    if minutes <= 0 or oldest_pending is None:
        return None
    waited = now - oldest_pending
    if waited < timedelta(minutes=minutes):
        return None
    line = (
        f"{count} deliveries wait to be folded, the oldest since {_when(oldest_pending)}"
        f" ({waited.total_seconds() / 60:.0f} min); the limit is {minutes:g} min"
    )
    return Finding(BACKLOG, BACKLOG, None, line, _BACKLOG_ADVICE)


class DiskUsage(NamedTuple):
    total: int
    free: int


def disk(what: str, usage: DiskUsage, free_percent: float) -> Finding | None:
    """``what``'s disk (``journal`` or ``archive``) has less than ``free_percent`` free."""
    if free_percent <= 0 or usage.total <= 0:
        return None
    share = 100 * usage.free / usage.total
    if share >= free_percent:
        return None
    line = (
        f"the {what}'s disk is nearly full: {share:.1f} % free"
        f" ({usage.free / 2**30:.1f} GiB of {usage.total / 2**30:.1f} GiB);"
        f" the limit is {free_percent:g} %"
    )
    return Finding(f"{DISK}:{what}", f"{DISK} {what}", None, line, _DISK_ADVICE)


# --- gathering the facts ---------------------------------------------------------------------


def local_folders(settings: Settings) -> list[tuple[str, Path]]:
    """The folders whose disks the disk rule reads: the SQLite journal's and a local
    archive's. A PostgreSQL journal's or an S3 archive's space is not this machine's."""
    found = []
    journal = urls.journal_location(settings.journal_url)
    if isinstance(journal, urls.SqliteLocation):
        found.append(("journal", Path(journal.path).parent))
    archive = urls.archive_location(settings.archive_url)
    if isinstance(archive, urls.FolderLocation):
        found.append(("archive", Path(archive.path)))
    return found


def _usage(folder: Path) -> DiskUsage | None:
    """The disk of ``folder`` (or of its nearest existing parent); None if unreadable."""
    for candidate in (folder, *folder.resolve().parents):
        try:
            total, _, free = shutil.disk_usage(candidate)
        except OSError:
            continue
        return DiskUsage(total, free)
    return None


def metric_days(journal: Journal, account: Account, now: datetime) -> list[MetricDays]:
    """The account's metrics over the last ``COVERAGE_WINDOW_DAYS``, from the read side's
    coverage (``Reads.coverage``: days on the phone's clock, ``find_gaps``' daily rule)."""
    from healthlog.reads import Reads

    reads = Reads(journal, account)
    start = now - timedelta(days=COVERAGE_WINDOW_DAYS)
    return [
        MetricDays(c.metric, c.last_day, c.daily)
        for c in reads.coverage(start=start)
        if c.last_day is not None
    ]


def evaluate(
    journal: Journal,
    settings: Settings,
    now: datetime | None = None,
    *,
    usage: Callable[[Path], DiskUsage | None] = _usage,
    account_id: str | None = None,
) -> list[Finding]:
    """Every rule that holds now, per account (one account's with ``account_id``), then
    those of the whole journal (the backlog, the disks)."""
    now = now or ids.now()
    found: list[Finding] = []
    for account in journal.accounts():
        if account_id is not None and account.id != account_id:
            continue
        summary = journal.summary(account.id)
        hit = no_delivery(account, summary.last_delivery, now, settings.watch_no_delivery_h)
        found += [hit] if hit else []
        if settings.watch_silent_days > 0:
            today = now.astimezone(zone_named(account.time_zone)).date()
            days = metric_days(journal, account, now)
            found += silent_metrics(account, days, today, settings.watch_silent_days)
        found += failures(account, summary)
    whole = journal.summary()
    hit = backlog(whole.oldest_pending, whole.backlog, now, settings.watch_backlog_min)
    found += [hit] if hit else []
    for what, folder in local_folders(settings):
        measured = usage(folder)
        hit = None if measured is None else disk(what, measured, settings.watch_disk_free_percent)
        found += [hit] if hit else []
    return found


def check_text(found: Sequence[Finding]) -> str:
    """``status --check``'s output: ``OK``, or one line per rule that holds."""
    return "\n".join(f.check_line() for f in found) if found else "OK"
