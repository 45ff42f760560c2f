"""Pictures of one metric, for ``healthlog plot``: PNG or SVG, drawn by matplotlib's Agg.

matplotlib is the optional extra ``plot`` (``pip install 'healthlog[plot]'``) and is
imported only when a picture is drawn; this module imports without it.

What a picture shows (docs/operations.md, "Plots"):

* time on the x axis, on the phone's clock: a bucket at its local start, a raw point at
  its local time (its offset is named under the axis);
* a *discrete* metric (``reads.kind_of``) as its average line over a min-max band;
* a *cumulative* one as bars, a bar a bucket, each the bucket's sum;
* ``sleep_analysis`` as stacked stage bars per night (``Reads.sleep_nights``);
* a gap as a gap: the line breaks where the next bucket is more than one bucket after
  the last one (a raw series: more than ``RAW_GAP_FACTOR`` times its median spacing),
  and nothing is interpolated across it.

The drawing functions (``plot_series``, ``plot_nights``) take what the read module
returns and a path; ``plot_metric`` reads and draws, and is what the command calls.
"""

from __future__ import annotations

import itertools
import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from healthlog import files
from healthlog.clock import Moment, Wall
from healthlog.errors import HealthlogError
from healthlog.reads import (
    WIDTHS,
    Kind,
    MetricInfo,
    Night,
    Reads,
    Resolution,
    Series,
    SeriesQuery,
    next_bucket,
    sample_time,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: the picture formats, by the output file's extension
FORMATS = ("png", "svg")

#: the size of a picture, in inches at DPI dots per inch (1000 x 450 pixels)
SIZE = (10.0, 4.5)
DPI = 100

#: with no --resolution: the finest whose buckets over the range stay under this many
PLOT_BUCKETS = 400

#: a raw series breaks where two points are this many times its median spacing apart
RAW_GAP_FACTOR = 5.0

#: the series' colour (line, band and bars), and the sleep stages', bottom to top
COLOUR = "#1f6fb4"
STAGES = (
    ("deep", "#1b2f7a"),
    ("core", "#3a78d0"),
    ("rem", "#8ab8f0"),
    ("asleep", "#5b9bd5"),  # unstaged sleep
    ("awake", "#f0a43a"),
)

_WIDTHS = dict(WIDTHS)


class MissingExtra(HealthlogError):
    """healthlog plot needs matplotlib: pip install 'healthlog[plot]'"""


class NothingToPlot(HealthlogError):
    """There is no data to plot in this range."""


@dataclass(frozen=True, slots=True)
class Drawn:
    """What a picture shows: its marks and the numbers behind them (for messages, tests)."""

    path: Path
    marks: int  # bars, nights, or points on the line
    segments: int  # runs of the line between gaps (0: bars)
    values: list[float]  # the bars' heights or the line's values, in time order


def check_output(text: str) -> Path:
    """The output path of a picture; ValueError saying why it cannot be one."""
    path = Path(text)
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        shown = f".{suffix}" if suffix else "no extension"
        raise ValueError(f"{text!r} has {shown}: name a .png or .svg file")
    folder = path.parent
    if not folder.is_dir():
        raise ValueError(f"the folder {str(folder)!r} does not exist")
    return path


def require_matplotlib() -> None:
    """MissingExtra, saying what to install, when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingExtra() from None


# --- reading and drawing --------------------------------------------------------------------


def plot_metric(
    reads: Reads,
    metric: str,
    path: Path,
    *,
    field: str | None = None,
    start: Moment | None = None,
    end: Moment | None = None,
    resolution: Resolution | None = None,
    source: str | None = None,
) -> Drawn:
    """Read a metric over [start, end) and draw it to ``path``.

    ``start`` and ``end`` are bounds as every read takes them (``healthlog.clock``,
    docs/time.md): an aware datetime an instant, a naive one the phone's clock, text
    the stored UTC text or a prefix of it. UnknownName (from the read module, naming
    the nearest) for a metric or field the account does not have; NothingToPlot when
    the range holds no data.
    """
    require_matplotlib()
    if metric == "sleep_analysis" and field is None:
        fields = reads.metric_fields(metric)  # an unknown name is an error, not a blank
        if resolution is not None or source is not None:
            raise HealthlogError(
                "sleep_analysis is drawn a night a bar, from the source with the most sleep: "
                "drop --resolution and --source, or name a --field to draw it as a series"
            )
        nights = reads.sleep_nights(start=start, end=end)
        if not nights:
            raise NothingToPlot(_empty(metric, None, start, end, fields))
        return plot_nights(nights, path)
    asked = reads.ask(
        SeriesQuery(
            metric,
            field=field,
            source=source,
            start=start,
            end=end,
            resolution=resolution,
            max_buckets=PLOT_BUCKETS,
        )
    )
    series, info = asked.series, asked.info
    if not any(s.value is not None for s in series.samples):
        raise NothingToPlot(_empty(metric, info.field, start, end, [info], source))
    return plot_series(series, path)


def plot_series(series: Series, path: Path) -> Drawn:
    """Draw a series: bars for a cumulative metric, a line over a band for a discrete one."""
    samples = [s for s in series.samples if s.value is not None]
    if not samples:
        raise NothingToPlot()
    fig, ax = _figure()
    times = [sample_time(s.t) for s in samples]
    values = [float(s.value) for s in samples if s.value is not None]
    raw = series.resolution is Resolution.RAW
    if series.kind is Kind.CUMULATIVE:
        xs = [_num(t) for t in times]
        width, align = _bar_width(series.resolution, xs)
        bars = ax.bar(xs, values, width=width, align=align, color=COLOUR, label="sum")
        for i, rect in enumerate(bars.patches):
            rect.set_gid(f"series-bar-{i}")
        marks, segments = len(values), 0
        per = "" if raw else f" per {series.resolution.value}"
        ax.set_ylabel(f"{series.unit}{per}", parse_math=False)
        ax.set_ylim(bottom=0)
    else:
        breaks = gaps(times, series.resolution)
        line_x: list[float] = []
        line_y: list[float] = []
        lows: list[float] = []
        highs: list[float] = []
        for i, (t, s) in enumerate(zip(times, samples, strict=True)):
            if i in breaks:  # a NaN between two buckets: the line and the band break
                line_x.append(_num(times[i - 1] + (t - times[i - 1]) / 2))
                line_y.append(math.nan)
                lows.append(math.nan)
                highs.append(math.nan)
            line_x.append(_num(t))
            line_y.append(float(s.value) if s.value is not None else math.nan)
            lows.append(float(s.min) if s.min is not None else math.nan)
            highs.append(float(s.max) if s.max is not None else math.nan)
        if any(lo != hi for lo, hi in zip(lows, highs, strict=True) if not math.isnan(lo)):
            band = ax.fill_between(
                line_x, lows, highs, color=COLOUR, alpha=0.22, linewidth=0, label="min to max"
            )
            band.set_gid("series-band")
        (line,) = ax.plot(
            line_x,
            line_y,
            color=COLOUR,
            linewidth=2,
            marker="o" if len(values) <= 60 else None,
            markersize=3.5,
            label="value" if raw else "average",
        )
        line.set_gid("series-line")
        marks, segments = len(values), len(breaks) + (1 if values else 0)
        ax.set_ylabel(series.unit, parse_math=False)
    _time_axis(ax, _time_label(series))
    title = f"{series.metric} · {series.field} · {_extent(series)} · {series.resolution.value}"
    if series.truncated:
        title += f" (the first {len(series.samples)} rows)"
    ax.set_title(title, parse_math=False)  # data is text: a $ is a dollar
    if series.kind is Kind.DISCRETE or raw:
        ax.legend(loc="best", fontsize="small", frameon=False)
    _save(fig, path)
    return Drawn(path, marks, segments, values)


def plot_nights(nights: Sequence[Night], path: Path) -> Drawn:
    """Draw sleep per night: the stages stacked, a bar a night, and the time in bed."""
    if not nights:
        raise NothingToPlot()
    fig, ax = _figure()
    xs = [_num(date.fromisoformat(n.night)) for n in nights]
    bottom = [0.0] * len(nights)
    width = _visible(0.8, xs)
    for stage, colour in STAGES:
        heights = [n.stages.get(stage, 0.0) for n in nights]
        if not any(heights):
            continue
        bars = ax.bar(xs, heights, width=width, bottom=bottom, color=colour, label=stage)
        for i, rect in enumerate(bars.patches):
            rect.set_gid(f"sleep-{stage}-{i}")
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    in_bed = [
        (x, n.stages["in_bed"]) for x, n in zip(xs, nights, strict=True) if "in_bed" in n.stages
    ]
    if in_bed:
        (marker,) = ax.plot(
            [x for x, _ in in_bed],
            [h for _, h in in_bed],
            linestyle="none",
            marker="_",
            markersize=18,
            markeredgewidth=2,
            color="#222222",
            label="in bed",
        )
        marker.set_gid("in-bed")
    ax.set_ylabel("hours")
    top = max([*bottom, *(h for _, h in in_bed)], default=0.0)
    ax.set_ylim(0, top * 1.25 or 1.0)  # headroom for the legend
    _time_axis(ax, "night (the local date it ends on)")
    first, last = nights[0].night, nights[-1].night
    extent = first if first == last else f"{first} to {last}"
    ax.set_title(f"sleep_analysis · stages per night · {extent}")
    ax.legend(loc="upper left", fontsize="small", frameon=False, ncols=3)
    _save(fig, path)
    return Drawn(path, len(nights), 0, [n.asleep_h for n in nights])


# --- times ----------------------------------------------------------------------------------


def gaps(times: Sequence[datetime], resolution: Resolution) -> set[int]:
    """The indexes ``i`` where the line breaks between ``times[i - 1]`` and ``times[i]``."""
    if len(times) < 2:
        return set()
    if resolution is Resolution.RAW:
        steps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
        positive = [s for s in steps if s > 0]
        if not positive:
            return set()
        limit = RAW_GAP_FACTOR * statistics.median(positive)
        return {i + 1 for i, step in enumerate(steps) if step > limit}
    return {i for i in range(1, len(times)) if times[i] > next_bucket(times[i - 1], resolution)}


def _extent(series: Series) -> str:
    cut = 16 if series.resolution in (Resolution.RAW, Resolution.MINUTE, Resolution.HOUR) else 10
    labels = [s.t[:cut].replace("T", " ") for s in series.samples if s.value is not None]
    first, last = labels[0], labels[-1]
    return first if first == last else f"{first} to {last}"


def _time_label(series: Series) -> str:
    if series.resolution is not Resolution.RAW:
        mark = "bar" if series.kind is Kind.CUMULATIVE else "point"
        return f"local time, a {mark} a {series.resolution.value}"
    offsets = sorted(
        {
            offset
            for s in series.samples
            if (offset := datetime.fromisoformat(s.t).utcoffset()) is not None
        }
    )
    names = [_offset_name(o) for o in offsets]
    if not names:
        return "local time"
    return f"local time ({names[0] if len(names) == 1 else names[0] + ' to ' + names[-1]})"


def _offset_name(offset: timedelta) -> str:
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _bar_width(resolution: Resolution, xs: Sequence[float]) -> tuple[float, Any]:
    """A bar's width in days, and its alignment: a bucket's bar spans 90% of the bucket."""
    if resolution is Resolution.RAW:
        steps = [b - a for a, b in itertools.pairwise(xs) if b > a]
        return (0.8 * min(steps) if steps else 1 / 24), "center"
    if resolution is Resolution.MONTH:
        return _visible(0.9 * 30, xs), "edge"
    width = _WIDTHS[resolution] / timedelta(days=1)
    return _visible(0.9 * width, xs), "edge"


#: a bar is at least this share of the time axis wide, where its neighbours leave room
MIN_BAR_SHARE = 0.004


def _visible(width: float, xs: Sequence[float]) -> float:
    """``width``, or wider when the bars are few over a long range (a night over years)."""
    if len(xs) < 2:
        return width
    room = min((b - a for a, b in itertools.pairwise(xs) if b > a), default=width)
    return max(width, min((xs[-1] - xs[0]) * MIN_BAR_SHARE, 0.9 * room))


def _empty(
    metric: str,
    field: str | None,
    start: Moment | None,
    end: Moment | None,
    infos: Sequence[MetricInfo],
    source: str | None = None,
) -> str:
    what = metric if field is None else f"{metric} ({field})"
    where = f"from {_shown(start) or 'the beginning'} to {_shown(end) or 'the end'}"
    if source is not None:
        where += " for that source"
    first = min(i.first for i in infos)[:10]
    last = max(i.last for i in infos)[:10]
    return f"no {what} data {where}; it has data from {first} to {last}"


def _shown(at: Moment | None) -> str | None:
    """A bound as a person gave it (a wall-clock time without an offset)."""
    if isinstance(at, Wall):
        at = at.at
    return at.isoformat() if isinstance(at, datetime) else at


# --- matplotlib -----------------------------------------------------------------------------


def _num(at: datetime | date) -> float:
    """A time as matplotlib's date number (days since its epoch)."""
    from matplotlib import dates as mdates

    return float(mdates.date2num(at))  # type: ignore[no-untyped-call]


def _figure() -> tuple[Figure, Axes]:
    """A figure on the Agg canvas: no pyplot, no global backend, no display."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtra() from None
    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, axis="y", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _time_axis(ax: Axes, label: str) -> None:
    from matplotlib import dates as mdates

    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_xlabel(label, parse_math=False)


def _save(fig: Figure, path: Path) -> None:
    import matplotlib

    fmt = path.suffix.lower().lstrip(".")
    # SVG text stays text (titles can be read back) and its ids do not change run to run
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "healthlog"}):
        try:
            # its owner's only, as every file -o writes: a plot shows health data
            with open(files.private_file(path, os.O_WRONLY | os.O_TRUNC), "wb") as out:
                fig.savefig(
                    out, format=fmt, dpi=DPI, metadata={"Date": None} if fmt == "svg" else {}
                )
        except OSError as exc:
            raise HealthlogError(f"cannot write {path} ({exc.strerror or exc})") from None
