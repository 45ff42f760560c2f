"""The dashboard's read API: JSON under ``/api/``, one account's data (docs/dashboard.md).

Every endpoint reads through ``healthlog.reads.Reads`` for the account in view (see
``app.py``); times in query strings are ISO 8601 dates or date-times, half open:
``start`` inclusive, ``end`` exclusive. Without an offset a time is the phone's wall
clock of each sample (docs/time.md), on every endpoint alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from datetime import date, datetime, time, timedelta
from typing import Any

from flask import Blueprint, Response, current_app, request

from healthlog import ids, reads
from healthlog.archive.port import Archive
from healthlog.clock import UnknownZone, zone_named
from healthlog.dashboard.errors import DashboardError
from healthlog.errors import ArchiveUnavailable, BodyMissing
from healthlog.model import ParseStatus
from healthlog.ops import watch
from healthlog.reads import display, ranges, shapes, units
from healthlog.reads.coverage import resend_advice

api = Blueprint("api", __name__, url_prefix="/api")

#: the other sections the Records page shows, with their labels (``healthlog.reads.display``)
SECTIONS = display.SECTION_NAMES


def _heavy(view: Callable[[], Any]) -> Callable[[], Any]:
    """A read whose cost grows with the data: one of ``heavy.SLOTS`` at a time, else 503."""

    @functools.wraps(view)
    def in_a_slot() -> Any:
        with current_app.extensions["healthlog"]["heavy"].slot():
            return view()

    return in_a_slot


def _reads() -> reads.Reads:
    ext = current_app.extensions["healthlog"]
    return reads.Reads(ext["journal"], ext["current_account"](), ext["options"].priority)


def _archive() -> Archive:
    archive: Archive = current_app.extensions["healthlog"]["archive"]
    return archive


def _range() -> dict[str, datetime | None]:
    """``start`` and ``end`` as every interface reads a range (``ranges.given``,
    docs/time.md): naive without an offset, a wall-clock time on the phone's clock."""
    try:
        found = ranges.given(
            request.args.get("start"),
            request.args.get("end"),
            lambda: zone_named(_reads().account.time_zone),
        )
    except (ranges.BadBound, UnknownZone) as exc:
        raise DashboardError(400, str(exc)) from None
    return {"start": found.start, "end": found.end}


def _shown(found: dict[str, datetime | None]) -> dict[str, str | None]:
    return {name: None if at is None else at.isoformat() for name, at in found.items()}


def _int(name: str, default: int, top: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise DashboardError(400, f"{name}: not a whole number") from None
    if not 1 <= value <= top:
        raise DashboardError(400, f"{name}: between 1 and {top}")
    return value


# --- who and what -------------------------------------------------------------------------


@api.get("/session")
def session() -> Any:
    """The account in view, whether sign-in is required, and (without sign-in) the accounts."""
    ext = current_app.extensions["healthlog"]
    options = ext["options"]
    data: dict[str, Any] = {"sign_in_required": options.require_sign_in}
    if options.require_sign_in:
        account = ext["session_account"]()
        if account is None:
            raise DashboardError(401, "sign in with your account's token first")
        data["accounts"] = [account.name]
    else:
        names = [a.name for a in ext["journal"].accounts()]
        data["accounts"] = [options.account_name] if options.account_name else names
        account = None
        try:
            account = ext["current_account"]()
        except DashboardError as exc:
            data["choose"] = exc.message
    data["account"] = None if account is None else {"id": account.id, "name": account.name}
    return data


@api.get("/status")
def status() -> Any:
    """What ``healthlog status`` says: counts per status, backlog, uncovered keys."""
    summary = _reads().status()
    oldest = summary.oldest_pending
    return {
        "counts": summary.counts,
        "backlog": summary.backlog,
        "oldest_pending": oldest.isoformat() if oldest else None,
        "oldest_pending_age_s": (
            round((ids.now() - oldest).total_seconds(), 3) if oldest else None
        ),
        "last_delivery": summary.last_delivery.isoformat() if summary.last_delivery else None,
        "failures": dict(
            sorted(
                ((k or "unknown", n) for k, n in summary.failures.items()),
                key=lambda kv: (-kv[1], kv[0]),
            )
        ),
        "uncovered": summary.uncovered,
        "points": summary.points,
        "records": summary.records,
        "watch": _watch(),
    }


def _watch() -> list[dict[str, object]] | None:
    """The watch's rules that hold for the account in view (and, without sign-in, the
    journal's own: the backlog, the disks), as ``healthlog status --check`` says them;
    None where the dashboard was given no settings to judge them by."""
    ext = current_app.extensions["healthlog"]
    settings = ext["options"].settings
    if settings is None:
        return None
    account = _reads().account
    found = watch.evaluate(ext["journal"], settings, account_id=account.id)
    whole = not ext["options"].require_sign_in
    return [f.as_dict() for f in found if f.account == account.name or (whole and not f.account)]


@api.get("/summary")
@_heavy
def summary() -> Any:
    """Today and the last 7 days of each metric, a 30-day sparkline and the trend of the
    last 90 days against the last 365 (``reads.summary``); ``until`` (a day) stands for
    today. Beside it, the status line: the last delivery, the backlog, the failures."""
    raw = request.args.get("until") or None
    try:
        today = None if raw is None else date.fromisoformat(raw)
    except ValueError:
        raise DashboardError(400, f"until: a day (YYYY-MM-DD), not {raw!r}") from None
    r = _reads()
    if today is None:
        today = reads.today(r.account.time_zone)
    cards = [shapes.card_dict(g) for g in r.summary(today)]
    state = r.status()
    failed = state.counts.get(ParseStatus.FAILED.value, 0)
    return {
        "today": today.isoformat(),
        "cards": cards,
        "status": {
            "last_delivery": _iso(state.last_delivery),
            "backlog": state.backlog,
            "failed": failed,
            "watch": len(found) if (found := _watch()) is not None else None,
        },
    }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


@api.get("/catalog")
def catalog() -> Any:
    """Every metric field of the account: unit, kind, points, first and last, sources;
    beside the stored ``metric``, ``field`` and ``unit``, a person's ``display_name``
    ("Heart rate · Maximum"), ``display_metric`` ("Heart rate") and ``display_unit``."""
    return {
        "metrics": [
            shapes.field_dict(i) | _names(i.metric, i.field, i.unit) for i in _reads().catalog()
        ]
    }


def _names(metric: str, field: str, unit: str | None) -> dict[str, str]:
    """A metric field's names for people (``healthlog.reads.display``), beside the stored ones."""
    return {
        "display_name": display.display_name(metric, field),
        "display_metric": display.metric_name(metric),
        "display_unit": display.unit_name(unit, metric),
    }


# --- metrics --------------------------------------------------------------------------------


@api.get("/series")
@_heavy
def series() -> Any:
    """One metric field over [start, end) at a resolution (default: the finest under
    2000 buckets over the range as given: the chart's zoom)."""
    metric = request.args.get("metric")
    if not metric:
        raise DashboardError(400, "metric: required")
    raw_resolution = request.args.get("resolution") or None
    try:
        resolution = reads.Resolution(raw_resolution) if raw_resolution else None
    except ValueError:
        known = ", ".join(r.value for r in reads.Resolution)
        raise DashboardError(400, f"resolution: one of {known}") from None
    r = _reads()
    bounds = _range()
    span, anchor = _span()
    asked = r.ask(
        reads.SeriesQuery(
            metric,
            field=request.args.get("field") or None,
            source=request.args.get("source") or None,
            start=bounds["start"],
            end=bounds["end"],
            resolution=resolution,
            over_range=True,  # the chart's zoom: the range as given, days for all of it
            span=span,
            anchor=anchor,
        )
    )
    if asked.window is not None:  # the span's days stand for the range
        bounds = {"start": _day(asked.window.start), "end": _day(asked.window.end)}
    # the field in the unit the series reads (a field stored in two): its sources, extent
    info = asked.info
    found = asked.series.as_dict()
    fields = r.field_names(metric, asked.catalog)
    return (
        found
        | _names(metric, found["field"], found["unit"])
        | {
            "sources": list(info.sources),
            "fields": fields,
            "display_fields": {
                f: display.field_name(metric, f) or display.metric_name(metric) for f in fields
            },
            "first": info.first,
            "last": info.last,
            "window": None if asked.window is None else _window(asked.window),
            **_shown(bounds),
        }
    )


def _span() -> tuple[reads.Span | None, date | None]:
    """``range`` (D, W, M, 6M, Y, All) and ``until`` (its last day, a date) if asked."""
    raw, until = request.args.get("range") or None, request.args.get("until") or None
    if raw is None:
        if until is not None:
            raise DashboardError(400, "until: only with range (D, W, M, 6M, Y or All)")
        return None, None
    if request.args.get("start") or request.args.get("end"):
        raise DashboardError(400, "range: either a range or start and end, not both")
    try:
        span = reads.span_named(raw)
    except reads.BadSpan as exc:
        raise DashboardError(400, str(exc)) from None
    try:
        anchor = None if until is None else date.fromisoformat(until)
    except ValueError:
        raise DashboardError(400, f"until: a day (YYYY-MM-DD), not {until!r}") from None
    return span, anchor


def _day(day: date | None) -> datetime | None:
    return None if day is None else datetime(day.year, day.month, day.day)


def _window(w: reads.Window) -> dict[str, str | None]:
    """A span's days as the page shows and moves them (``reads.windows``)."""
    return {
        "range": w.span.value,
        "until": w.anchor.isoformat(),
        "earlier": None if w.earlier is None else w.earlier.isoformat(),
        "later": None if w.later is None else w.later.isoformat(),
    }


#: the most metrics one /api/daily names (each a read of its own), as the MCP tool's
DAILY_METRICS = 12


@api.get("/daily")
@_heavy
def daily() -> Any:
    """A day a row for the metrics named (``metric`` repeated): each day's sum or average."""
    metrics = request.args.getlist("metric")
    if not metrics:
        raise DashboardError(400, "metric: name at least one")
    if len(metrics) > DAILY_METRICS:
        raise DashboardError(400, f"metric: at most {DAILY_METRICS} at once")
    bounds = _range()
    return {"days": _reads().daily(metrics, start=bounds["start"], end=bounds["end"])}


#: the most days ``/api/coverage?days=N`` takes (a century)
COVERAGE_DAYS = 36_600


def _coverage_range() -> dict[str, datetime | None]:
    """``start``/``end`` as given; else ``days=N``: the N days ending on the account's
    last day with data (``Reads.recent_days``); else (or ``days=all``) every day."""
    found = _range()
    raw = (request.args.get("days") or "").strip()
    if found["start"] is not None or found["end"] is not None or raw in ("", "all"):
        return found
    days = _int("days", 90, COVERAGE_DAYS)
    first, last = _reads().recent_days(days)
    return {
        "start": datetime.combine(first, time()),
        "end": datetime.combine(last + timedelta(days=1), time()),
    }


@api.get("/coverage")
@_heavy
def coverage() -> Any:
    """Per metric: points per local day, the gaps (with what to re-send), the late points;
    over ``start``/``end``, or ``days`` (N, or ``all``) ending on the last day with data."""
    r = _reads()
    bounds = _coverage_range()
    found = r.coverage(metric=request.args.get("metric") or None, **bounds)
    out = []
    for c in found:
        item = c.as_dict() | {"display_name": display.metric_name(c.metric)}
        for gap in item["gaps"]:
            gap["resend"] = resend_advice(c.metric, gap["first"], gap["last"])
        out.append(item)
    first, last = reads.range_days(bounds["start"], bounds["end"])
    return {
        "metrics": out,
        "first_day": first,
        "last_day": last,
        "last_data_day": r.last_data_day(),
    }


# --- sleep, workouts, records -----------------------------------------------------------------


@api.get("/sleep")
def sleep() -> Any:
    """Sleep per night: hours per stage, from the source with the most sleep that night,
    bedtime, wake time and the 7-day average; the 7- and 30-day windows' figures. Over
    [start, end), or a ``range`` (D, W, M, 6M, Y, All) ending ``until`` (default: the
    last night), as the metric page's (``Reads.span_window``)."""
    r = _reads()
    bounds, chosen = _range(), None
    span, anchor = _span()
    if span is not None and any(i.metric == "sleep_analysis" for i in r.catalog()):
        chosen = r.span_window("sleep_analysis", span, anchor, every_field=True)
        bounds = {"start": _day(chosen.start), "end": _day(chosen.end)}
    found = shapes.sleep_dict(r.sleep_figures(**bounds))
    return found | {"window": None if chosen is None else _window(chosen), **_shown(bounds)}


def _unit_system() -> str | None:
    """``units``: metric or imperial (400 for another), else None: the account's."""
    chosen = request.args.get("units")
    if chosen is not None:
        try:
            units.check_system(chosen)
        except units.BadUnitSystem as exc:
            raise DashboardError(400, f"units: {exc}") from None
    return chosen


@api.get("/workouts")
def workouts() -> Any:
    """The workouts in [start, end), without their series: each with its figures, and
    the totals per ISO week, in the account's units (or ``units``)."""
    chosen = _unit_system()
    found = _reads().workout_list(**_range(), unit_system=chosen)
    return {
        "unit_system": found.unit_system,
        "workouts": [
            shapes.workout_head(w) | {"figures": shapes.figures_dict(f)} for w, f in found.workouts
        ],
        "weeks": [shapes.week_dict(t) for t in found.weeks],
    }


def _items(workout: reads.Workout, name: str) -> list[dict[str, Any]]:
    return [
        {
            "t": reads.local_text(i.t, workout.utc_offset),
            "qty": i.qty,
            "unit": i.unit,
            "display_unit": display.unit_name(i.unit, name),
        }
        for i in workout.series.get(name, [])
    ]


def _up(alt_m: float | None, to: str) -> float | None:
    """A route fix's altitude (m) in the page's unit of elevation."""
    if alt_m is None:
        return None
    shown = units.convert(alt_m, "m", to)
    return None if shown is None else round(shown, 1)


@api.get("/workouts/<path:identity>")
def workout(identity: str) -> Any:
    """One workout: its fields, figures, splits, heart-rate zones and series, route
    (lon/lat/alt) and route summary."""
    chosen = _unit_system()
    detail = _reads().workout_detail(identity, unit_system=chosen)
    w = detail.workout
    up = units.target(detail.figures.unit_system, "elevation")
    return shapes.workout_dict(detail) | {
        "heart_rate": _items(w, "heartRateData"),
        "heart_rate_recovery": _items(w, "heartRateRecovery"),
        "route": [
            {"lon": i.lon, "lat": i.lat, "alt": i.alt, "elevation": _up(i.alt, up)}
            for i in w.route()
        ],
        "elevation_unit": units.shown(up),
        "route_summary": w.route_summary().as_dict(),
    }


@api.get("/sections")
def sections() -> Any:
    """The sections other than metrics that the account has, with their record counts."""
    have = _reads().sections()
    return {
        "sections": [
            {"section": s, "label": display.section_name(s), "records": n} for s, n in have.items()
        ]
    }


@api.get("/records/<section>")
def records(section: str) -> Any:
    """A section's records, each with its fields for people (``shapes.record_dict``) and
    the table's ``columns``; ``items=1`` adds their series (an ECG's voltage trace, a
    notification's heart rates, an HRV reading's beats)."""
    r = _reads()
    if section not in r.sections():
        raise DashboardError(404, f"no records of section {section!r} in this account's data")
    with_items = request.args.get("items") in ("1", "true", "yes")
    bounds = _range()
    found = r.records(section, start=bounds["start"], end=bounds["end"], with_items=with_items)
    return {
        "section": section,
        "label": display.section_name(section),
        "columns": shapes.record_columns(found),
        "records": found,
    }


# --- deliveries -------------------------------------------------------------------------------


def body_removed_text(removed: datetime) -> str:
    """What the body's URL answers for a body retention removed (410 Gone)."""
    return (
        f"healthlog retention removed this delivery's body from the archive on "
        f"{removed:%Y-%m-%d} (UTC); what its fold wrote stays"
    )


@api.get("/deliveries")
def deliveries() -> Any:
    """The account's deliveries, newest first (``limit``, default 100; ``status``)."""
    r = _reads()
    wanted = request.args.get("status") or None
    try:
        chosen = ParseStatus(wanted) if wanted else None
    except ValueError:
        known = ", ".join(s.value for s in ParseStatus)
        raise DashboardError(400, f"status: one of {known}") from None
    limit = _int("limit", 100, 10_000)
    rows = r.deliveries(limit=limit, status=chosen)
    return {"deliveries": [shapes.delivery_dict(d) for d in rows]}


@api.get("/deliveries/<delivery_id>")
def delivery(delivery_id: str) -> Any:
    """One delivery: headers as stored, outcome, failure class, uncovered keys, points."""
    r = _reads()
    found = r.delivery(delivery_id)
    body_url = None if found.body_removed_at else f"/api/deliveries/{found.id}/body"
    return shapes.delivery_dict(found, full=True) | {"body_url": body_url}


_EXTENSIONS = {
    "application/json": "json",
    "text/csv": "csv",
    "application/vnd.healthlog.apple-health-export+zip": "zip",
    "application/vnd.healthlog.apple-health-export+xml": "xml",
}


@api.get("/deliveries/<delivery_id>/body")
def delivery_body(delivery_id: str) -> Any:
    """The delivery's body as archived (gzip taken off), as a download.

    Streamed from a file in 1 MiB chunks: an import of the Health app's export runs to
    gigabytes, which must not be read into memory (S3: a private temporary copy).
    """
    d = _reads().delivery(delivery_id)
    if d.body_removed_at is not None:
        raise DashboardError(410, body_removed_text(d.body_removed_at))
    archive = _archive()
    try:
        size = archive.size(d.archive_key)
    except BodyMissing:
        raise DashboardError(404, "the archive has no body under this delivery's key") from None
    except ArchiveUnavailable:
        raise DashboardError(503, "the archive could not be read; try again") from None
    extension = _EXTENSIONS.get(d.content_type.split(";")[0].strip().lower(), "bin")
    return Response(
        _chunks(archive, d.archive_key),
        mimetype="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{d.id}.{extension}"',
            "Content-Length": str(size),
        },
    )


def _chunks(archive: Archive, key: str) -> Iterator[bytes]:
    with archive.local_file(key) as path, open(path, "rb") as body:
        while chunk := body.read(1 << 20):
            yield chunk
