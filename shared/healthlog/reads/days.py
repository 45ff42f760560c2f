"""A field's days from the sums the fold keeps, and the mixed days it counts for them.

``DayReads``: days, weeks and months of a field read from the days the fold keeps summed
(``point_day_sums``), each day the overlap rule could count otherwise read from the
fold's count (``counted_days``) or summed from its points; and ``count_days``, which
counts those days for the fold to keep (``Journal.keep_counted_days``).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from healthlog.clock import At, Moment, from_text, runs_of_days
from healthlog.journal.port import BucketRow, CountedDay, DaySum
from healthlog.reads import overlap
from healthlog.reads.bounds import _bound, _day_in, _day_span, _moved, _tighter
from healthlog.reads.catalog import CatalogReads
from healthlog.reads.counting import Counting, _mixed
from healthlog.reads.values import Kind, MetricInfo, Resolution, Sample


def _sample(row: BucketRow, kind: Kind) -> Sample:
    value = row.sum if kind is Kind.CUMULATIVE else row.avg
    return Sample(row.start, value, row.min, row.max, row.count)


class DayReads(CatalogReads, Counting):
    """The reads of a field by the days the fold keeps, and the count of its mixed days."""

    def _by_days(
        self,
        metric: str,
        info: MetricInfo,
        start: Moment | None,
        end: Moment | None,
        resolution: Resolution,
    ) -> list[Sample]:
        """Days, weeks or months from the days the fold keeps summed (point_day_sums).

        A kept day counts as it is when the range holds all of it and the overlap rule
        cannot count it otherwise (one source, or a discrete metric; one origin). The
        other days the range reaches (cut by its ends, or where sources or origins
        overlap) are summed from their points, as any other read does: so the cost
        follows the days, and the numbers are the points' own.
        """
        low, high = _bound(start), _bound(end)
        day_from, day_to = _day_span(low, high)
        may = self._may_overlap(info)
        by_day = resolution is Resolution.DAY
        cumulative = info.kind is Kind.CUMULATIVE
        rows: dict[str, Sample] = {}  # by_day: the samples themselves
        days: dict[str, overlap.Sums] = {}
        rest: list[DaySum] = []
        # the mixed days the fold has counted by the rule already (count_days)
        counted = self._counted(info, day_from, day_to) if may else {}
        for kept in self.journal.day_sums(
            account_id=self.account.id,
            metric=metric,
            field=info.field,
            day_from=day_from,
            day_to=day_to,
        ):
            # a read of years makes this loop its hot path: the row unpacked once
            day, points, valued, total, least, most, earliest, latest, _, _ = kept
            reached = _day_in(day, earliest, latest, low, high)
            if reached is None:
                continue  # none of the day's points is in the range
            if reached and may and _mixed(kept, info):
                found = counted.get(day)
                if found is None:
                    rest.append(kept)
                    continue
                points, valued, total, least, most = found
            if reached:
                if by_day:  # the day's sample itself, no sums to add up
                    value = total if cumulative or total is None else total / valued
                    rows[day] = Sample(day, value, least, most, points)
                else:
                    days[day] = overlap.Sums(points, valued, total, least, most)
            else:
                rest.append(kept)
        for day, sums in self._count_runs(info, rest, low, high, may).items():
            if by_day:
                rows[day] = _sample(sums.row(day), info.kind)
            else:
                days[day] = sums
        if by_day:
            return [rows[day] for day in sorted(rows)]
        return [_sample(row, info.kind) for row in overlap.roll_up(days, resolution.value)]

    def _count_runs(
        self,
        info: MetricInfo,
        kept_days: list[DaySum],
        low: At | None,
        high: At | None,
        may: bool,
    ) -> dict[str, overlap.Sums]:
        """The days of ``kept_days`` summed from their points, as the overlap rule counts
        them: each run of consecutive days on its own, so a range cut at both ends reads
        the points of its first and last days, not of every day between."""
        found: dict[str, overlap.Sums] = {}
        cumulative = info.kind is Kind.CUMULATIVE
        for run in runs_of_days(kept_days, lambda kept: date.fromisoformat(kept.day)):
            wanted = {kept.day for kept in run}
            lowest = min(kept.first for kept in run)
            latest = max(kept.last for kept in run)
            after = _moved(from_text(latest), timedelta(microseconds=1))
            counted = self.counted_points(
                info.metric,
                info.field,
                start=_tighter(low, lowest, run[0].day, later=False),
                end=_tighter(high, after, run[-1].day, later=True),
                ruled=may and any(_mixed(kept, info) for kept in run),
            )
            for day, sums in overlap.sums_by(counted, "day", spread=cumulative).items():
                if day in wanted:
                    found[day] = sums
        return found

    def _counted(
        self, info: MetricInfo, day_from: str, day_to: str
    ) -> dict[str, tuple[int, int, float | None, float | None, float | None]]:
        """The field's days in [day_from, day_to) the fold counted by the rule, for this
        read's priority (``count_days``)."""
        return {
            c.day: (c.points, c.valued, c.total, c.least, c.most)
            for c in self.journal.counted_days(
                account_id=self.account.id,
                metric=info.metric,
                field=info.field,
                priority=self.priority.key,
                day_from=day_from,
                day_to=day_to,
            )
        }

    def count_days(self, limit: int = 200) -> list[CountedDay]:
        """At most ``limit`` of the account's kept days that the overlap rule may count
        otherwise than their sums and that are not counted for this priority yet, counted
        now (the fold keeps them: ``Journal.keep_counted_days``), so that a read of such
        days reads them as it reads the others. A day counts as ``_by_days`` counts it
        for a range that holds all of it."""
        due = self.journal.uncounted_days(
            account_id=self.account.id, priority=self.priority.key, limit=limit
        )
        if not due:
            return []
        by_field: dict[tuple[str, str], list[str]] = defaultdict(list)
        for metric, field_, day in due:
            by_field[(metric, field_)].append(day)
        catalog = self.catalog()
        out: list[CountedDay] = []
        for (metric, field_), wanted in sorted(by_field.items()):
            infos = [i for i in catalog if i.metric == metric and i.field == field_]
            if not infos:
                continue
            info = max(infos, key=lambda i: i.points)
            first, last = min(wanted), max(wanted)
            kept = [
                k
                for k in self.journal.day_sums(
                    account_id=self.account.id,
                    metric=metric,
                    field=field_,
                    day_from=first,
                    day_to=(date.fromisoformat(last) + timedelta(days=1)).isoformat(),
                )
                if k.day in set(wanted)
            ]
            for day, sums in sorted(self._count_runs(info, kept, None, None, True).items()):
                values = (sums.points, sums.valued, sums.total, sums.low, sums.high)
                out.append(CountedDay(metric, field_, day, *values))
        return out
