"""Coverage: per metric, its points per local day, the gaps, and the points that came late.

``CoverageReads.coverage`` from the days the journal counts; ``find_gaps`` reports the
runs of days without data within each *stretch* of a metric's data that is *daily*
(``STRETCH_BREAK_DAYS``, ``DAILY_SHARE``; docs/dashboard.md, "Data coverage").
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from healthlog.clock import Moment, zone_named
from healthlog.reads.bounds import _day_after, _first_day
from healthlog.reads.series import SeriesReads
from healthlog.reads.values import Coverage, Gap

#: a stretch is *daily* when at least this share of its days have data; only then is a
#: day without data in it a gap (a weekly weigh-in has no gaps between weigh-ins)
DAILY_SHARE = 0.5

#: a silence (days in a row without data) longer than this ends a stretch of data: it is
#: a break between two stretches, never a gap, and each stretch is judged on its own
STRETCH_BREAK_DAYS = 30


@dataclass(frozen=True, slots=True)
class Stretch:
    """A run of days with data, no silence in it longer than ``STRETCH_BREAK_DAYS``."""

    first: str
    last: str
    days_with_data: int

    @property
    def span(self) -> int:
        """Its days, from the first to the last, both counted."""
        return (date.fromisoformat(self.last) - date.fromisoformat(self.first)).days + 1

    @property
    def daily(self) -> bool:
        return self.days_with_data / self.span >= DAILY_SHARE


def _stretches(have: list[date]) -> list[tuple[int, int]]:
    """Sorted days as stretches: the index of each one's first day and past its last."""
    found, start = [], 0
    for n in range(1, len(have) + 1):
        if n == len(have) or (have[n] - have[n - 1]).days - 1 > STRETCH_BREAK_DAYS:
            found.append((start, n))
            start = n
    return found


def stretches(days: dict[str, int] | list[str]) -> list[Stretch]:
    """The stretches of a metric's days with data, in order."""
    have = sorted(date.fromisoformat(day) for day in days)
    return [
        Stretch(have[a].isoformat(), have[b - 1].isoformat(), b - a) for a, b in _stretches(have)
    ]


def find_gaps(days: dict[str, int] | list[str]) -> tuple[list[Gap], bool]:
    """The runs of days without data inside each daily stretch of a metric's days.

    Returns (gaps, daily): ``daily`` is whether the metric's latest stretch is daily
    (what "arrives daily" means to the watch); a stretch that is not daily has no gaps,
    and a silence between two stretches is none either.
    """
    have = sorted(date.fromisoformat(day) for day in days)
    if not have:
        return [], False
    gaps = []
    daily = False
    for a, b in _stretches(have):
        daily = (b - a) / ((have[b - 1] - have[a]).days + 1) >= DAILY_SHARE
        if not daily:
            continue
        for before, after in itertools.pairwise(have[a:b]):
            missing = (after - before).days - 1
            if missing > 0:
                first, last = before + timedelta(days=1), after - timedelta(days=1)
                gaps.append(Gap(first.isoformat(), last.isoformat(), missing))
    return gaps, daily


def resend_advice(
    metric: str | None = None, first: str | None = None, last: str | None = None
) -> str:
    """What to do in Health Auto Export to send days again (docs/hae-setup.md, step 4):
    for one gap (its metric, its first and last day) or, without them, for any."""
    what = metric or "the metrics"
    when = f"from {first} to {last}" if first and last else "to the gap's first and last day"
    return (
        "To send a gap again: in Health Auto Export open the REST API automation, tap Manual"
        f" Export, choose {what}, set the date range {when}, and Export. Points already here"
        " are replaced by the re-sent ones, never doubled; they show after the next fold."
    )


def range_days(start: Moment | None, end: Moment | None) -> tuple[str | None, str | None]:
    """The first and last day (``YYYY-MM-DD``) a coverage over [start, end) counts, each
    None where the range is open: the day ``start`` falls on, the last ``end`` reaches
    into."""
    after = _day_after(end)
    last = None if after is None else (date.fromisoformat(after) - timedelta(days=1)).isoformat()
    return _first_day(start), last


class CoverageReads(SeriesReads):
    """The reads of coverage (a metric named is checked against the catalog)."""

    def coverage(
        self,
        *,
        metric: str | None = None,
        start: Moment | None = None,
        end: Moment | None = None,
    ) -> list[Coverage]:
        """Per metric: points per local day, the gaps, and the points that came late.

        Whole days of the phone's clock: from the day ``start`` falls on up to the last
        day ``end`` reaches into (each read on its own clock).
        """
        if metric is not None:
            self.metric_fields(metric)  # an unknown name is an error, not an empty list
        bounds = {"day_from": _first_day(start), "day_to": _day_after(end)}
        days: dict[str, dict[str, int]] = defaultdict(dict)
        for name, day, count in self.journal.metric_days(
            account_id=self.account.id, metric=metric, **bounds
        ):
            days[name][day] = count
        late: dict[str, dict[str, int]] = defaultdict(dict)
        for name, day, count in self.journal.late_points(
            account_id=self.account.id, metric=metric, **bounds
        ):
            late[name][day] = count
        result = []
        for name in sorted(days):
            gaps, daily = find_gaps(days[name])
            result.append(Coverage(name, days[name], gaps, late.get(name, {}), daily))
        return result

    def last_data_day(self) -> str | None:
        """The account's last day of the phone's clock with data (any metric)."""
        return self.journal.last_data_day(self.account.id)

    def recent_days(self, days: int, *, today: date | None = None) -> tuple[date, date]:
        """The ``days`` days of the phone's clock (first, last) that end on the account's
        last day with data, or on ``today`` (the account's zone) when it has none: the
        coverage page's default range."""
        if days < 1:
            raise ValueError("days must be positive")
        last_text = self.last_data_day()
        if last_text is not None:
            last = date.fromisoformat(last_text)
        elif today is not None:
            last = today
        else:
            last = datetime.now(zone_named(self.account.time_zone)).date()
        return last - timedelta(days=days - 1), last
