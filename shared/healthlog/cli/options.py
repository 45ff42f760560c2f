"""The options the commands share, typed so that a bad value is a usage error naming it.

The click types (``BoundType``, ``OutputFile``, ``PictureFile``, ``AccountName``,
``ZoneName``, ``AgeType``, ``PORT``), the choices spelled for the parser, the shared
decorators (``json_option``, ``account_options``, ``range_options``) and what their
values mean together: which account ``--account``/``--token`` choose, which range
``--from``/``--to`` give on which clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, timedelta, tzinfo
from pathlib import Path
from typing import Any, TypeVar

import click

from healthlog.clock import UnknownZone
from healthlog.errors import HealthlogError
from healthlog.journal.port import Journal
from healthlog.model import Account, ParseStatus
from healthlog.ops import accounts
from healthlog.reads import ranges

F = TypeVar("F", bound=Callable[..., Any])

STATUSES = [s.value for s in ParseStatus]
#: healthlog.reads.Resolution's values (spelled here: the parser imports no read module)
PLOT_RESOLUTIONS = ["raw", "minute", "hour", "day", "week", "month"]
EXPORT_FORMATS = ["csv", "jsonl", "geojson", "gpx"]


# --- option types ------------------------------------------------------------------------


class BoundType(click.ParamType[Any]):
    """``--from``/``--to``: a date, an ISO date-time (with or without an offset), or a
    relative form (``today``, ``yesterday``, ``7d``, ``24h``); ``healthlog.reads.ranges``."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, ranges.Bound):
            return value
        try:
            return ranges.parse(str(value))
        except ranges.BadBound as exc:
            self.fail(str(exc), param, ctx)


class OutputFile(click.ParamType[Any]):
    """A file to write: its folder must exist, and it must not be a folder itself."""

    name = "FILE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(value)
        if path.is_dir():
            self.fail(f"{str(path)!r} is a folder, not a file", param, ctx)
        folder = path.parent
        if not folder.is_dir():
            self.fail(f"the folder {str(folder)!r} does not exist", param, ctx)
        if not os.access(folder, os.W_OK):
            self.fail(f"the folder {str(folder)!r} is not writable", param, ctx)
        return path


class PictureFile(OutputFile):
    name = "FILE.png|FILE.svg"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from healthlog.cli import pictures as plot

        try:
            return plot.check_output(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class AccountName(click.ParamType[Any]):
    name = "NAME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return accounts.check_name(str(value))
        except accounts.BadName as exc:
            self.fail(f"{exc} (got {value!r})", param, ctx)


class ZoneName(click.ParamType[Any]):
    name = "ZONE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return accounts.check_zone(str(value))
        except HealthlogError as exc:
            self.fail(f"{exc}, such as Europe/Berlin", param, ctx)


class AgeType(click.ParamType[Any]):
    """``--older-than``: an amount of time ago, ``healthlog.reads.ranges``'s relative form
    (``90d``, ``12w``, ``36h``); more than nothing."""

    name = "AGE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        try:
            bound = ranges.parse(str(value))
        except ranges.BadBound:
            bound = None
        if bound is None or bound.ago is None:
            self.fail(f"{str(value)!r} is not an age (forms: 90d, 12w, 36h, 30m)", param, ctx)
        if bound.ago <= timedelta(0):
            self.fail(
                f"{str(value)!r} is no age at all: give one above zero, such as 90d", param, ctx
            )
        return bound.ago


PORT = click.IntRange(1, 65535)


# --- shared options ------------------------------------------------------------------------


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")(f)


def account_options(f: F, *, stdin: str = "out of the process list") -> F:
    """``--account NAME`` or ``--token TOKEN``: which account the command sees."""
    f = click.option(
        "--token",
        metavar="TOKEN",
        help=f"Only the account this access token belongs to (-: read it from stdin, {stdin}).",
    )(f)
    return click.option("--account", metavar="NAME", help="Only this account.")(f)


def range_options(what: str) -> Callable[[F], F]:
    def decorate(f: F) -> F:
        f = click.option(
            "--to",
            "end",
            type=BoundType(),
            help=f"End of the range, left out: {what} before it. Same forms as --from.",
        )(f)
        return click.option(
            "--from",
            "start",
            type=BoundType(),
            help=f"Start of the range, included: {what} from it on. A date (2026-11-30), an "
            "ISO date-time with or without an offset (2026-11-30T08:00+01:00; without one, "
            "on the account's clock), today, yesterday, or an amount ago (90m, 24h, 7d, 2w).",
        )(f)

    return decorate


# --- what the options' values mean -----------------------------------------------------------


def chosen_account(account: str | None, token: str | None) -> str | None:
    """The ``--account``/``--token`` choice as ``accounts.find`` takes it."""
    if account is not None and token is not None:
        raise click.UsageError("choose the account with --account or --token, not both")
    return accounts.Token(token) if token is not None else account


def _zone_for(journal: Journal, account: Account | None, *bounds: ranges.Bound | None) -> tzinfo:
    """The zone that gives ``today``'s and ``yesterday``'s date: the account's (or the
    accounts' one). Every other bound needs none (docs/time.md)."""
    if not any(b is not None and b.needs_zone for b in bounds):
        return UTC  # unused
    if account is not None:
        names = {account.time_zone}
    else:
        names = {a.time_zone for a in journal.accounts()}
    if len(names) > 1:
        raise click.UsageError(
            "today and yesterday take their date on the account's time zone, and the "
            "accounts' time zones differ: choose one with --account NAME, or give a date "
            "(2026-11-30)"
        )
    try:
        return ranges.zone_named(names.pop() if len(names) == 1 else "UTC")
    except UnknownZone as exc:
        raise click.UsageError(
            f"{exc}: the account's time zone; set it with healthlog account set-tz"
        ) from None


def chosen_range(
    journal: Journal,
    account: Account | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
) -> ranges.Range:
    """The range ``--from``/``--to`` give, on the account's clock where it needs one."""
    zone = _zone_for(journal, account, start, end)
    try:
        return ranges.Range.of(start, end, zone)
    except ranges.BadBound as exc:
        raise click.BadParameter(str(exc), param_hint="'--from'/'--to'") from None
