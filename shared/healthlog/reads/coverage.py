"""Coverage: per metric, its points per local day, the gaps, and the points that came late.

``CoverageReads.coverage`` from the days the journal counts; ``find_gaps`` reports the
runs of days without data of a *daily* metric (``DAILY_SHARE``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import date, timedelta

from healthlog.clock import Moment
from healthlog.reads.bounds import _day_after, _first_day
from healthlog.reads.series import SeriesReads
from healthlog.reads.values import Coverage, Gap

#: a metric is *daily* when at least this share of the days of its span have data; only
#: then is a day without data a gap (a weekly weigh-in has no gaps between weigh-ins)
DAILY_SHARE = 0.5


def find_gaps(days: dict[str, int]) -> tuple[list[Gap], bool]:
    """The runs of days without data between a metric's first and last day with data.

    Reported only for a *daily* metric (``DAILY_SHARE``); returns (gaps, daily).
    """
    if not days:
        return [], False
    have = sorted(date.fromisoformat(day) for day in days)
    span = (have[-1] - have[0]).days + 1
    daily = len(have) / span >= DAILY_SHARE
    if not daily:
        return [], False
    gaps = []
    for before, after in itertools.pairwise(have):
        missing = (after - before).days - 1
        if missing > 0:
            first, last = before + timedelta(days=1), after - timedelta(days=1)
            gaps.append(Gap(first.isoformat(), last.isoformat(), missing))
    return gaps, True


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
