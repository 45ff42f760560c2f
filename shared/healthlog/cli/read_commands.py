"""The commands that read the showcase: summary, metrics, export, plot and coverage.

Each asks the read model (``healthlog.reads``) for one account (``--account`` or
``--token``, or the only one) and prints its answer; a name the journal does not know
is a usage error that lists the ones it does.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from healthlog.cli.common import bad_name, emit, obtain_settings, writing_to
from healthlog.cli.options import (
    EXPORT_FORMATS,
    PLOT_RESOLUTIONS,
    OutputFile,
    PictureFile,
    account_options,
    chosen_account,
    chosen_range,
    json_option,
    range_options,
)
from healthlog.ops import accounts
from healthlog.reads import ranges


@click.command()
@click.option("--until", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="The day that stands for today (YYYY-MM-DD; default: today on the "
              "account's zone).")  # fmt: skip
@account_options
@json_option
def summary(until: datetime | None, account: str | None, token: str | None, as_json: bool) -> None:
    """Today and the last 7 days of each metric, and its trend, as the dashboard's home
    page says them: a cumulative metric's total, a discrete one's average; the trend is
    the last 90 days against the last 365 (docs/dashboard.md, "Summary")."""
    from healthlog.cli import summary_report
    from healthlog.ops import store
    from healthlog.reads import Reads, shapes, today

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        reads = Reads.of(journal, accounts.find_id(journal, chosen), opened.settings.priority())
        day = until.date() if until is not None else today(reads.account.time_zone)
        cards = reads.summary(day)
    emit(
        as_json,
        {"today": day.isoformat(), "cards": [shapes.card_dict(c) for c in cards]},
        summary_report.text(cards, day),
    )


@click.command()
@account_options
@json_option
def metrics(account: str | None, token: str | None, as_json: bool) -> None:
    """List the metrics (with their fields, units, points, first and last times) and the
    other sections (with their records), per account: the names --metric and --section
    take."""
    from healthlog.ops import store
    from healthlog.reads import names

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        found = names.listing(opened.journal, accounts.find_id(opened.journal, chosen))
    emit(as_json, found, names.text(found))


@click.command()
@click.option("--metric", help="One metric (default: every one); `healthlog metrics` lists them.")
@click.option(
    "--section", help="The records of one section (workouts, ecg, symptoms...) instead of points."
)
@range_options("points (or records) that start")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="csv",
    show_default=True,
    help="geojson and gpx: workouts with their routes (--section workouts).",
)
@click.option("-o", "--output", type=OutputFile(), help="File to write (default: stdout).")
@click.option(
    "--every-point",
    is_flag=True,
    help="Also the points that count nothing where sources overlap (with counted 0).",
)
@account_options
def export(
    metric: str | None,
    section: str | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
    fmt: str,
    output: Path | None,
    every_point: bool,
    account: str | None,
    token: str | None,
) -> None:
    """Write the showcase's points, or a section's records, as CSV, JSON lines, GeoJSON
    or GPX.

    Times in the output are UTC, with the phone's offset beside them. The range is
    [--from, --to): a point is in when it starts at or after --from and before --to;
    a bound without an offset (2026-11-30) is on the phone's clock of each point, one
    with an offset that instant (docs/time.md).

    Where sources overlap (an import and HAE on the same day, an iPhone and a Watch
    counting the same steps), each point's `counted` column says what the dashboard,
    plots and summaries count of it, and points that count nothing are left out
    (docs/history.md, "One truth when sources overlap").
    """
    from healthlog import reads
    from healthlog.cli import progress
    from healthlog.ops import store
    from healthlog.reads import UnknownName, names, points_export, records_export

    if metric is not None and section is not None:
        raise click.UsageError("--metric and --section cannot go together")
    if fmt in records_export.ROUTE_FORMATS and section != "workouts":
        raise click.BadParameter(
            f"{fmt} draws routes: use it with --section workouts", param_hint="'--format'"
        )
    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        found = accounts.find(journal, chosen)
        account_id = None if found is None else found.id
        start_from, start_to = chosen_range(journal, found, start, end).bounds()
        try:
            if section is not None and not names.check_section(journal, account_id, section):
                click.echo(f"healthlog: no {section} records yet: the export is empty", err=True)
            if metric is not None:
                names.check_metric(journal, account_id, metric)
        except UnknownName as exc:
            raise bad_name("--section" if section is not None else "--metric", exc) from None
        bar = progress.Progress(
            "export",
            "records" if section is not None else "points",
            enabled=output is not None and progress.shown_to_person(),
        )
        with writing_to(output) as out, bar:
            if section is not None:
                records = journal.export_records(
                    account_id=account_id, section=section, start_from=start_from,
                    start_to=start_to,
                )  # fmt: skip
                records_export.write(bar.wrap(records), out, fmt)
            else:
                low, high = reads.widened(start_from, start_to)
                stored = journal.export_points(
                    account_id=account_id, metric=metric, start_from=low, start_to=high
                )
                points = reads.counted_stream(
                    journal, stored, opened.settings.priority(), keep_all=every_point,
                    within=(start_from, start_to),
                )  # fmt: skip
                points_export.write(bar.wrap(points), out, fmt)


@click.command()
@click.argument("metric")
@click.option("--field", help="One field of the metric (default: the one that stands for it).")
@range_options("points that start")
@click.option("--resolution", type=click.Choice(PLOT_RESOLUTIONS),
              help="Bucket size (default: from the range).")  # fmt: skip
@click.option("--source", help="Only the points of this source.")
@click.option("-o", "--output", type=PictureFile(), required=True, help="The picture to write.")
@account_options
@json_option
def plot(
    metric: str,
    field: str | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
    resolution: str | None,
    source: str | None,
    output: Path,
    account: str | None,
    token: str | None,
    as_json: bool,
) -> int:
    """Draw METRIC over time to a PNG or SVG picture (needs the extra healthlog[plot]).

    A discrete metric is its average over a min-max band, a cumulative one bars of its
    sums, sleep_analysis stages per night. Times are the phone's local times; a gap in
    the data is a gap in the line.
    """
    from healthlog.cli import pictures as plotting
    from healthlog.ops import store
    from healthlog.reads import Reads, Resolution, TooHeavy, UnknownName, names

    try:
        plotting.require_matplotlib()  # before anything is read
    except plotting.MissingExtra as exc:
        click.echo(f"healthlog: {exc}", err=True)
        return 1
    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        reads = Reads.of(journal, accounts.find_id(journal, chosen), opened.settings.priority())
        try:  # an unknown name is a usage error, as in export and coverage
            names.check_metric(journal, reads.account.id, metric)
        except UnknownName as exc:
            raise bad_name("METRIC", exc) from None
        bounds = chosen_range(journal, reads.account, start, end)
        try:
            drawn = plotting.plot_metric(
                reads,
                metric,
                output,
                field=field,
                start=bounds.start,
                end=bounds.end,
                resolution=Resolution(resolution) if resolution else None,
                source=source,
            )
        except UnknownName as exc:  # the metric is known: its field is not
            raise bad_name("--field", exc) from None
        except TooHeavy as exc:
            raise click.BadParameter(str(exc), param_hint="'--resolution'") from None
        except plotting.NothingToPlot as exc:
            click.echo(f"healthlog: {exc}", err=True)
            return 1
    emit(as_json, {"wrote": str(drawn.path)}, f"wrote {drawn.path}")
    return 0


@click.command()
@click.option("--metric", help="One metric (default: every one).")
@range_options("days")
@click.option(
    "--days",
    "per_day",
    is_flag=True,
    help="List every gap on a line of its own, and the late points of each day.",
)
@account_options
@json_option
def coverage(
    metric: str | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
    per_day: bool,
    account: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Per metric: days with data, gaps, and points that arrived late.

    Days are the phone's. A line per metric: the first and last day with data, the days
    with data, the gaps (days without data inside a stretch of data, no silence in it
    over 30 days, that has data on at least half its days) and the points HAE brought
    late (an export "Since Last Sync" would have missed them); then each metric's gaps
    in one line. --days lists every gap and the late points of each day; --json gives
    every day. Whole days: --from's day is in, and so is every day --to reaches into.
    docs/dashboard.md, "Data coverage".
    """
    from healthlog.cli import coverage_report
    from healthlog.ops import store
    from healthlog.reads import Reads, UnknownName

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        reads = Reads.of(journal, accounts.find_id(journal, chosen), opened.settings.priority())
        bounds = chosen_range(journal, reads.account, start, end)
        try:
            found = reads.coverage(metric=metric, start=bounds.start, end=bounds.end)
        except UnknownName as exc:
            raise bad_name("--metric", exc) from None
    emit(as_json, [c.as_dict() for c in found], coverage_report.text(found, per_day=per_day))


COMMANDS: tuple[click.Command, ...] = (summary, metrics, export, plot, coverage)
