"""The watch: rules over what the journal already knows, that tell when deliveries stop.

Each rule is a pure function of the journal's facts (an account's last delivery, its
failures by class, its metrics' days, the backlog, a disk's free space) and the
settings' thresholds (``HEALTHLOG_WATCH_*``; 0 turns a rule off), and gives a
``Finding`` while it holds. ``evaluate`` gathers them for every account. A finding's
texts carry only the rule, the account's name, a metric's name, times and counts: never a
health value, a source name, a header or a token. Each says what to do.

``Watcher`` tells each notification target (an apprise URL of
``HEALTHLOG_NOTIFY_URLS``) once when a rule starts to hold and once when it stops
(recovered), never once per evaluation: what each target was told is kept in the journal
(``Journal.watch_notices``), so a restart neither repeats nor loses a notice. A target
that cannot be reached is logged (its scheme and a hash, never the URL) and tried again
at the next evaluation.

docs/operations.md, "The watch".
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from healthlog import ids, log, urls
from healthlog.clock import zone_named
from healthlog.config import Settings
from healthlog.fold.classify import CRASHED
from healthlog.journal.port import Journal, ShowcaseReads, StaleToken, Summary, WatchNotice
from healthlog.model import Account
from healthlog.terminal import shown

logger = logging.getLogger("healthlog.watch")

#: the days of coverage the silent-metric rule reads: a metric counts as daily on these
#: (``reads.DAILY_SHARE`` of their days with data), and one silent for longer drops out
COVERAGE_WINDOW_DAYS = 90

NO_DELIVERY = "no_delivery"
SILENT_METRIC = "silent_metric"
FAILED = "failed"
PARTIAL = "partial"
BACKLOG = "backlog"
DISK = "disk"
STALE_TOKEN = "stale_token"  # noqa: S105 (a rule's name, not a secret)
RULES = (NO_DELIVERY, SILENT_METRIC, FAILED, PARTIAL, BACKLOG, DISK, STALE_TOKEN)

#: a token replaced by ``healthlog account rotate`` that requests still come with: the
#: rule holds once ``HEALTHLOG_WATCH_STALE_TOKENS`` were refused, the last within this
STALE_TOKEN_WINDOW = timedelta(hours=24)

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
_ROTATED_ADVICE = (
    "The phone still sends the token this account had before it was rotated: open Health"
    " Auto Export, the REST API automation, Headers, and put the new token in"
    " Authorization (`Bearer <token>`; `healthlog account rotate` printed it, or rotate"
    " again). Its deliveries are refused until then; send the missed range with the"
    " automation's Manual Export afterwards."
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


def stale_token(
    account: Account, stale: Sequence[StaleToken], now: datetime, refusals: int
) -> Finding | None:
    """Requests still come with a token the account had before a rotation: at least
    ``refusals`` refused, the last within ``STALE_TOKEN_WINDOW``."""
    if refusals <= 0:
        return None
    recent = [
        t for t in stale if t.refused >= refusals and now - t.last_refused_at < STALE_TOKEN_WINDOW
    ]
    if not recent:
        return None
    token = max(recent, key=lambda t: t.last_refused_at)
    line = (
        f"{token.refused} requests refused since {_when(token.first_refused_at)}, the last"
        f" {_when(token.last_refused_at)}: they came with the token replaced"
        f" {_when(token.retired_at)}"
    )
    return Finding(f"{STALE_TOKEN}:{account.id}", STALE_TOKEN, account.name, line,
                   _ROTATED_ADVICE)  # fmt: skip


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


def metric_days(journal: ShowcaseReads, account: Account, now: datetime) -> list[MetricDays]:
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
    journal: ShowcaseReads,
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
        hit = stale_token(
            account, journal.stale_tokens(account.id), now, settings.watch_stale_tokens
        )
        found += [hit] if hit else []
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


# --- telling: targets, notices, the evaluator --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """One notification target: its apprise URL (a secret: never logged, never stored),
    and what may be shown of it: its place in the setting, its scheme, a hash."""

    url: str = field(repr=False)
    position: int

    @property
    def id(self) -> str:
        """The hash the journal keeps the target's notices under."""
        return hashlib.sha256(self.url.encode()).hexdigest()[:32]

    @property
    def shown(self) -> str:
        """``#2 json (3fa2c1d0)``: which target, without a byte of its URL's secrets."""
        scheme = self.url.split("://", 1)[0] if "://" in self.url else "?"
        return f"#{self.position} {scheme} ({self.id[:8]})"


def targets(settings: Settings) -> list[Target]:
    """``HEALTHLOG_NOTIFY_URLS`` split at commas and spaces, in order."""
    found = [u for u in re.split(r"[\s,]+", settings.notify_urls) if u]
    return [Target(url, i) for i, url in enumerate(found, start=1)]


class Message(NamedTuple):
    """What one target is told: a rule started to hold (its finding), or it stopped;
    with the notice the journal holds of it, if any (a claim to take up, a notice to
    end)."""

    target: Target
    key: str
    title: str
    body: str
    recovered: bool
    notice: WatchNotice | None = None


#: where a notice stands in the journal (``WatchNotice.state``)
TELLING, TOLD, ENDING = "telling", "told", "ending"
#: a claim older than this that its evaluator never confirmed (killed between the claim
#: and the send) is taken up again: longer than any one send takes
CLAIM_S = 300.0


#: sends one message; True if the target took it
Send = Callable[[Target, str, str], bool]


def apprise_send(target: Target, title: str, body: str) -> bool:
    """Through apprise; its own log is kept quiet (its debug lines name the URL)."""
    import apprise

    logging.getLogger("apprise").setLevel(logging.CRITICAL + 1)
    sender = apprise.Apprise()
    if not sender.add(target.url):
        log.event(logger, logging.WARNING, "watch.target_invalid", target=target.shown)
        return False
    return bool(sender.notify(body=body, title=title))


@dataclass(frozen=True, slots=True)
class Report:
    """One evaluation: what holds, what was told (or, dry, would be), what failed."""

    found: list[Finding]
    sent: list[Message]
    failed: list[Message]
    targets: int

    def as_dict(self) -> dict[str, object]:
        def shown(m: Message) -> dict[str, object]:
            return {"target": m.target.shown, "key": m.key, "title": m.title,
                    "body": m.body, "recovered": m.recovered}  # fmt: skip

        return {
            "holds": [f.as_dict() for f in self.found],
            "sent": [shown(m) for m in self.sent],
            "failed": [shown(m) for m in self.failed],
            "targets": self.targets,
        }

    def text(self, dry_run: bool) -> str:
        lines = [check_text(self.found)]
        if not self.targets:
            lines.append("no targets to tell: HEALTHLOG_NOTIFY_URLS is empty")
        verb = "would send" if dry_run else "sent"
        for m in self.sent:
            lines += ["", f"{verb} to {m.target.shown}: {m.title}", m.body]
        for m in self.failed:
            lines.append(f"could not send to {m.target.shown}: {m.title} (tried again next time)")
        if self.targets and not self.sent and not self.failed:
            lines.append("nothing to send: every target knows")
        return "\n".join(lines)


def recovered_text(notice: WatchNotice, now: datetime) -> str:
    return f"It no longer holds (checked {_when(now)}); it was told {_when(notice.told_at)}."


class Watcher:
    """Evaluates the rules and tells each target what changed since it was last told."""

    def __init__(
        self,
        journal: Journal,
        settings: Settings,
        *,
        send: Send = apprise_send,
        usage: Callable[[Path], DiskUsage | None] = _usage,
    ) -> None:
        self.journal = journal
        self.settings = settings
        self.targets = targets(settings)
        self._send = send
        self._usage = usage

    def pending(self, found: Sequence[Finding], now: datetime) -> list[Message]:
        """What each target is to be told: the findings it was not told, the notices of
        rules that no longer hold, and what a claim left unfinished (its evaluator was
        killed between the claim and the send) for longer than ``CLAIM_S``."""
        told: dict[str, dict[str, WatchNotice]] = {}
        for notice in self.journal.watch_notices():
            told.setdefault(notice.target, {})[notice.rule_key] = notice
        holding = {f.key for f in found}
        stale = now - timedelta(seconds=CLAIM_S)
        messages = []
        for target in self.targets:
            known = told.get(target.id, {})
            for f in found:
                n = known.get(f.key)
                if n is None or (n.state == TELLING and n.told_at <= stale):
                    messages.append(Message(target, f.key, f.subject, f.text(), False, n))
            for key, n in known.items():
                if key in holding and n.state != ENDING:
                    continue
                if n.state == TOLD or (n.state == ENDING and n.told_at <= stale):
                    title = f"{n.subject}: recovered"
                    messages.append(Message(target, key, title, recovered_text(n, now), True, n))
        return messages

    def run(self, now: datetime | None = None, *, dry_run: bool = False) -> Report:
        """One evaluation: the rules, then each change told to each target. Each is
        claimed in the journal first (``telling``, or ``ending`` for a "recovered"), so
        two evaluators at once tell it once, and confirmed once the target took it
        (``told``, or the notice ended); a send that fails gives the claim back, and a
        claim its evaluator never finished is taken up again after ``CLAIM_S``."""
        now = now or ids.now()
        found = evaluate(self.journal, self.settings, now, usage=self._usage)
        messages = self.pending(found, now)
        if dry_run:
            return Report(found, messages, [], len(self.targets))
        sent, failed = [], []
        for m in messages:
            claim = self._claim(m, now)
            if claim is None:
                continue  # another evaluator has it
            if self._tell(m):
                sent.append(m)
                if m.recovered:
                    self.journal.delete_watch_notice(m.target.id, m.key)
                else:
                    self.journal.move_watch_notice(claim, state=TOLD, at=claim.told_at)
            else:
                failed.append(m)
                # given back: the next evaluation tells it again
                if m.recovered:
                    self.journal.move_watch_notice(claim, state=TOLD, at=claim.told_at)
                else:
                    self.journal.delete_watch_notice(m.target.id, m.key)
        if sent or failed:
            log.event(logger, logging.INFO, "watch.told", sent=len(sent), failed=len(failed),
                      holds=len(found))  # fmt: skip
        return Report(found, sent, failed, len(self.targets))

    def _claim(self, m: Message, now: datetime) -> WatchNotice | None:
        """The notice as claimed for ``m``'s send, or None if another evaluator has it."""
        state = ENDING if m.recovered else TELLING
        if m.notice is None:
            notice = WatchNotice(m.target.id, m.key, m.title, now, TELLING)
            return notice if self.journal.add_watch_notice(notice) else None
        if not self.journal.move_watch_notice(m.notice, state=state, at=now):
            return None
        return m.notice._replace(state=state, told_at=now)

    def _tell(self, m: Message) -> bool:
        try:
            ok = self._send(m.target, m.title, m.body)
        except Exception as exc:  # a target's failure never stops the others, nor serve
            log.event(logger, logging.WARNING, "watch.notify_failed", target=m.target.shown,
                      error=type(exc).__name__)  # fmt: skip
            return False
        if not ok:
            log.event(logger, logging.WARNING, "watch.notify_failed", target=m.target.shown,
                      error="not_sent")  # fmt: skip
        return ok


class WatchLoop:
    """``healthlog serve``'s watch: an evaluation now and every ``interval_s`` seconds on
    a thread of its own, over a journal of its own. Whatever fails in it is logged and
    tried again at the next round: it never stops ingest or the fold."""

    def __init__(self, settings: Settings, interval_s: float) -> None:
        self._settings = settings
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthlog-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, grace_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout=grace_s)

    def _run(self) -> None:
        from healthlog.ops import wiring

        journal: Journal | None = None
        try:
            while not self._stop.is_set():
                try:
                    journal = journal or wiring.open_journal(self._settings)
                    Watcher(journal, self._settings).run()
                except Exception as exc:  # logged; the next round tries again
                    log.event(logger, logging.WARNING, "watch.failed", error=type(exc).__name__)
                self._stop.wait(self._interval_s)
        finally:
            if journal is not None:
                journal.close()
