"""One truth where sources overlap: stored points as the overlap rule counts them.

``counted_stream`` for ``healthlog export`` (many metrics and accounts in one stream), and
``Counting``, the reads' mixin: whether the rule can change a read at all
(``overlaps_possible``, from the days the fold keeps summed) and the points of one metric
that count, with how much (``counted_points``). The rule itself is ``healthlog.reads.overlap``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Generator, Iterable, Iterator

from healthlog import priority
from healthlog.clock import At, Moment, meets
from healthlog.journal.port import DaySum, ShowcaseReads, StoredPoint
from healthlog.reads import overlap
from healthlog.reads.base import Base
from healthlog.reads.bounds import _bound, _day_span, widened
from healthlog.reads.values import Kind, MetricInfo, kind_of


class Counting(Base):
    """The reads that count stored points by the overlap rule."""

    def overlaps_possible(
        self,
        info: MetricInfo,
        source: str | None = None,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
    ) -> bool:
        """Whether the overlap rule can change a read of ``info`` (else: plain SQL).

        Only a day with points of an import and of HAE (rule 1), or, for a cumulative
        metric read without a source filter, a day with several sources (rule 2), can be
        counted otherwise; the days the fold keeps summed say whether the range has one.
        """
        if not self._may_overlap(info, source):
            return False  # neither can happen here, whatever the days hold
        day_from, day_to = _day_span(_bound(start), _bound(end))
        return any(
            _mixed(kept, info, source)
            for kept in self.journal.day_sums(
                account_id=self.account.id,
                metric=info.metric,
                field=info.field,
                day_from=day_from,
                day_to=day_to,
            )
        )

    def _may_overlap(self, info: MetricInfo, source: str | None = None) -> bool:
        """Whether any day of ``info`` could be counted otherwise: an account with imports
        (rule 1), or a cumulative metric of several sources read whole (rule 2)."""
        if self.imported():
            return True
        return info.kind is Kind.CUMULATIVE and source is None and len(info.sources) > 1

    def counted_points(
        self,
        metric: str,
        field: str | None = None,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        source: str | None = None,
        ruled: bool = True,
        unit: str | None = None,
    ) -> Generator[overlap.Candidate[StoredPoint], None, None]:
        """The stored points of ``metric`` in [start, end) that count, with how much.

        ``ruled=False``: every point, counted whole (a read the rule cannot change).
        ``unit``: only the points stored in it (a field stored in several).
        """
        low, high = (_bound(start), _bound(end))
        if ruled:
            low, high = widened(low, high)
        stored = self.journal.export_points(
            account_id=self.account.id,
            metric=metric,
            field=field,
            source=source,
            unit=unit,
            start_from=low,
            start_to=high,
        )
        try:
            if ruled:
                # the caller found the rule can apply: no second look for imports and
                # sources (counted_stream's, for an export of many metrics and accounts)
                cumulative = kind_of(metric) is Kind.CUMULATIVE
                within = (_bound(start), _bound(end))
                yield from _ruled(stored, self.imported(), cumulative, self.priority, within=within)
            else:
                yield from (_candidate(p, frozenset()) for p in stored)
        finally:
            close = getattr(stored, "close", None)
            if close is not None:
                close()  # end the stream now: its snapshot is not held until collected


def _mixed(kept: DaySum, info: MetricInfo, source: str | None = None) -> bool:
    """Whether the overlap rule can count a kept day otherwise than its sums: points of an
    import and of HAE (rule 1), or several sources of a cumulative metric (rule 2)."""
    several = info.kind is Kind.CUMULATIVE and source is None and kept.sources > 1
    return 0 < kept.imported < kept.points or several


def counted_stream(
    journal: ShowcaseReads,
    stored: Iterable[StoredPoint],
    priority: priority.SourcePriority = priority.DEFAULT,
    *,
    keep_all: bool = False,
    within: tuple[At | None, At | None] = (None, None),
) -> Iterator[overlap.Candidate[StoredPoint]]:
    """Stored points in export order (account, metric, start), as the overlap rule counts them.

    Each account's imports are looked up once. ``within``: only points that start in
    [low, high) come out (read them ``widened``, so their days are decided whole).
    """
    low, high = within
    imported: dict[str, frozenset[str]] = {}
    several: dict[str, set[str]] = {}  # per account: cumulative metrics of several sources
    for (account_id, metric), group in itertools.groupby(
        stored, key=lambda p: (p.account_id, p.point.metric)
    ):
        if account_id not in imported:
            imported[account_id] = ids = journal.imported_deliveries(account_id)
            if not ids:
                sources: dict[str, set[str]] = defaultdict(set)
                for entry in journal.catalog(account_id):
                    sources[entry.metric].add(entry.source)
                several[account_id] = {m for m, found in sources.items() if len(found) > 1}
        ids = imported[account_id]
        cumulative = kind_of(metric) is Kind.CUMULATIVE
        if not ids and not (cumulative and metric in several[account_id]):
            # nothing the rules could change: every point counts whole, as it comes
            for p in group:
                point = p.point
                if meets(point.start, point.utc_offset, low, high):
                    yield _candidate(p, ids)
            continue
        yield from _ruled(group, ids, cumulative, priority, keep_all=keep_all, within=within)


def _ruled(
    stored: Iterable[StoredPoint],
    imported: frozenset[str],
    cumulative: bool,
    priority: priority.SourcePriority,
    *,
    keep_all: bool = False,
    within: tuple[At | None, At | None] = (None, None),
) -> Iterator[overlap.Candidate[StoredPoint]]:
    """One metric's stored points (in start order) as the rule counts them, those that
    start in ``within`` ([low, high)); ``imported``: the account's imports."""
    low, high = within
    for found in overlap.counted(
        (_candidate(p, imported) for p in stored),
        cumulative=cumulative,
        priority=priority,
        keep_all=keep_all,
    ):
        if meets(found.start, found.utc_offset, low, high):
            yield found


def _candidate(p: StoredPoint, imported: frozenset[str]) -> overlap.Candidate[StoredPoint]:
    point = p.point
    return overlap.Candidate(
        point.field,
        point.start,
        point.end,
        point.utc_offset,
        point.source,
        point.qty,
        p.delivery_id,
        p.delivery_id in imported,
        p,
        point.qty,
    )
