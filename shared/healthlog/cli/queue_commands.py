"""The commands that look after the deliveries, the fold's queue and the journal.

status, deliveries, watch, fold, replay, reconcile, retention and migrate. replay and
retention hold the journal's fold lock, as a pass does; replay, reconcile and retention
show their progress on a terminal (``progress``); the texts are ``delivery_report``'s.
"""

from __future__ import annotations

from datetime import timedelta

import click

from healthlog.cli.common import emit, obtain_settings
from healthlog.cli.options import STATUSES, AgeType, account_options, chosen_account, json_option
from healthlog.errors import HealthlogError
from healthlog.model import ParseStatus
from healthlog.ops import accounts


@click.command()
@click.option("--check", is_flag=True,
              help="Instead: the watch's rules that hold, one a line, and exit status 1; "
              "else OK and 0 (for Nagios, Uptime Kuma, healthchecks).")  # fmt: skip
@account_options
@json_option
def status(check: bool, account: str | None, token: str | None, as_json: bool) -> int:
    """Counts per status, the backlog, the uncovered keys, what the showcase holds."""
    from healthlog.cli import delivery_report
    from healthlog.ops import store

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        account_id = accounts.find_id(opened.journal, chosen)
        if check:
            from healthlog.ops import watch

            found = watch.evaluate(opened.journal, opened.settings, account_id=account_id)
            emit(as_json, [f.as_dict() for f in found], watch.check_text(found))
            return 1 if found else 0
        summary = opened.journal.summary(account_id)
        removed = opened.journal.count_removed_bodies(account_id)
    emit(
        as_json,
        delivery_report.status_dict(summary, removed),
        delivery_report.status_text(summary, removed),
    )
    return 0


@click.command()
@click.option("--dry-run", is_flag=True,
              help="Show what would be sent to each target; send and record nothing.")  # fmt: skip
@json_option
def watch(dry_run: bool, as_json: bool) -> None:
    """Evaluate the watch's rules once and tell the targets what changed.

    Each target of HEALTHLOG_NOTIFY_URLS (apprise URLs) gets one message when a rule
    starts to hold and one when it stops (recovered), never one per run: what each was
    told is kept in the journal. For cron or a systemd timer; `healthlog serve` does the
    same every tick. A target that cannot be reached is logged and tried at the next run.
    """
    from healthlog.ops import store
    from healthlog.ops import watch as watching

    with store.opened(obtain_settings(), "read" if dry_run else "write") as opened:
        report = watching.Watcher(opened.journal, opened.settings).run(dry_run=dry_run)
    emit(as_json, report.as_dict(), report.text(dry_run))


@click.command()
@click.option("--status", "status_", type=click.Choice(STATUSES), help="Only this status.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="At most this many, newest first.")  # fmt: skip
@account_options
@json_option
def deliveries(
    status_: str | None, limit: int, account: str | None, token: str | None, as_json: bool
) -> None:
    """List the deliveries, newest first."""
    from healthlog.cli import delivery_report
    from healthlog.ops import store

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        account_id = accounts.find_id(opened.journal, chosen)
        rows = opened.journal.deliveries(
            status=ParseStatus(status_) if status_ else None,
            account_id=account_id,
            limit=limit,
            newest_first=True,
        )
    emit(
        as_json,
        [delivery_report.delivery_dict(d) for d in rows],
        delivery_report.deliveries_text(rows),
    )


@click.command()
@json_option
def fold(as_json: bool) -> None:
    """Run one fold pass now and print the outcome counts."""
    from healthlog.cli import delivery_report
    from healthlog.fold.service import FoldService
    from healthlog.ops import store

    settings = obtain_settings()
    with store.opened(settings, "write", archive=True) as opened:
        service = FoldService(opened.journal, opened.archive, settings)
        report = service.run(wait_s=settings.pass_budget_s * 2)
    if report is None:
        raise HealthlogError("another fold pass kept the journal's fold lock; try again")
    data = report.as_dict()
    emit(as_json, data, delivery_report.fold_text(data))


@click.command()
@click.option("--all", "every", is_flag=True, help="Every delivery.")
@click.option("--status", "status_", type=click.Choice(STATUSES),
              help="The deliveries of this status.")  # fmt: skip
@click.option("--uncovered", metavar="KEY", help="The deliveries with this uncovered key.")
@click.option(
    "--failure",
    metavar="CLASS",
    help="The failed deliveries of this class (crashed, deadline, unreadable...).",
)
@click.option("--dry-run", is_flag=True, help="Parse and report what would change; write nothing.")
@account_options
@json_option
def replay(
    every: bool,
    status_: str | None,
    uncovered: str | None,
    failure: str | None,
    dry_run: bool,
    account: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Re-fold deliveries through the same player as a pass.

    Choose them with exactly one of --all, --status, --uncovered or --failure. The
    showcase comes out the same whatever the order, so a replay is always safe.
    """
    from healthlog.cli import delivery_report, progress
    from healthlog.fold.replay import replay as replay_deliveries
    from healthlog.fold.service import make_player
    from healthlog.ops import store

    picked = [every, status_ is not None, uncovered is not None, failure is not None]
    if sum(picked) != 1:
        raise click.UsageError("choose the deliveries with one of --all, --status, "
                               "--uncovered KEY or --failure CLASS")  # fmt: skip
    chosen = chosen_account(account, token)
    settings = obtain_settings()
    bar = progress.Progress("replay", "deliveries", enabled=progress.shown_to_person(as_json))
    with store.opened(settings, "write", archive=True) as opened, bar:
        journal = opened.journal
        account_id = accounts.find_id(journal, chosen)
        player = make_player(journal, opened.archive, settings)
        # replay holds the fold lock like a pass: no delivery is folded by two at once
        with journal.fold_lock(wait_s=settings.pass_budget_s * 2) as held:
            if not held:
                raise HealthlogError("a fold pass kept the journal's fold lock; try again")
            report = replay_deliveries(
                journal,
                player,
                status=ParseStatus(status_) if status_ else None,
                uncovered_key=uncovered,
                account_id=account_id,
                failure=failure,
                dry_run=dry_run,
                progress=bar.update,
            )
    data = report.as_dict()
    emit(as_json, data, delivery_report.replay_text(data))


@click.command()
@json_option
def reconcile(as_json: bool) -> None:
    """Journal the archived bodies that have no journal row (safe to run any time)."""
    from healthlog.cli import delivery_report, progress
    from healthlog.ops import reconcile as reconciling
    from healthlog.ops import store

    bar = progress.Progress(
        "reconcile", "archived bodies", enabled=progress.shown_to_person(as_json)
    )
    with store.opened(obtain_settings(), "write", archive=True) as opened, bar:
        report = reconciling.reconcile(opened.journal, opened.archive, progress=bar.update)
    data = report.as_dict()
    emit(as_json, data, delivery_report.reconcile_text(data))


@click.command()
@click.option("--older-than", "older_than", type=AgeType(), required=True,
              help="Remove parsed deliveries' bodies received longer ago: 90d, 12w.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@json_option
def retention(older_than: timedelta, dry_run: bool, as_json: bool) -> None:
    """Delete the archived bodies of parsed deliveries older than an age.

    Never a partial, failed or pending delivery's body (a later parser or a retry needs
    it). The journal keeps the row and marks the body removed before it is deleted, and
    the showcase keeps what it brought; replay and a rebuild from the archive skip it.
    docs/operations.md, "Retention".
    """
    from healthlog.cli import delivery_report, progress
    from healthlog.ops import store
    from healthlog.ops.retention import retain

    settings = obtain_settings()
    unit = "bodies found" if dry_run else "bodies removed"
    bar = progress.Progress("retention", unit, enabled=progress.shown_to_person(as_json))
    with (
        store.opened(settings, "write", archive=True) as opened,
        bar,
        # the fold lock, like replay: no replay reads a body while it is deleted
        opened.journal.fold_lock(wait_s=settings.pass_budget_s * 2) as held,
    ):
        if not held:
            raise HealthlogError("a fold pass kept the journal's fold lock; try again")
        report = retain(
            opened.journal, opened.archive, older_than, dry_run=dry_run, progress=bar.update
        )
    data = report.as_dict()
    emit(as_json, data, delivery_report.retention_text(data))


@click.command()
@json_option
def migrate(as_json: bool) -> None:
    """Bring the journal's schema up to this healthlog's (other writing commands do too)."""
    from healthlog.ops import store

    settings = obtain_settings()
    before = store.schema_version(settings)
    with store.opened(settings, "write"):
        pass
    after = store.schema_version(settings)
    data = {"from": before, "to": after}
    text = (
        f"the journal's schema was at version {after} already"
        if before == after
        else f"the journal's schema went from version {before} to {after}"
    )
    emit(as_json, data, text)


COMMANDS: tuple[click.Command, ...] = (
    status,
    watch,
    deliveries,
    fold,
    replay,
    reconcile,
    retention,
    migrate,
)
