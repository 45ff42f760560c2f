"""Migration 0019: late counts without imports (docs/database.md, "Migrations").

Before 0019 an import of the Health app's export was judged like any delivery: its
points older than the newest start of the HAE deliveries received before it were
counted late (a year of history imported after two months of HAE: every day late), and
its own newest start raised the bar that the HAE deliveries after it were judged by.
From 0019 on, ``metric_bars`` leaves imports out (docs/dashboard.md, "Data coverage").

What the fold counted is corrected here by replaying the bars from
``delivery_extents``, in the order the deliveries were received: per metric, the newest
start of every earlier delivery (the old bar) and of the earlier HAE deliveries only
(the new one). Which delivery first brought a point is not stored; a point is taken to
have been brought first by a delivery whose extent holds its start:

- a point an import's layer holds, in the first import whose extent holds it, is taken
  off its day's late count when it is older than that import's old bar;
- a point an HAE layer holds is taken off when it lies, within an HAE delivery's extent,
  between that delivery's new bar and its old one (the part an import's bar made late).

A day's late count never goes below 0. The rule misjudges a point only where a key came
from both origins or where a late point's time lies in that window of an earlier
delivery's extent; both are rare, and neither makes a day late that was not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta

from healthlog.archive import keys
from healthlog.journal import rows
from healthlog.journal.driver import Connection
from healthlog.journal.statements import Statements

#: a half-open range of starts, as the journal's UTC text
Span = tuple[str, str]

_IMPORTS = {"zip": keys.EXPORT_ZIP, "xml": keys.EXPORT_XML}


def _after(at: str) -> str:
    """The first stored time after ``at`` (times are kept to the microsecond)."""
    return rows.to_text(rows.from_text(at) + timedelta(microseconds=1))


def minus(span: Span, taken: Iterable[Span]) -> list[Span]:
    """``span`` less every range in ``taken``, as disjoint ranges in order."""
    parts = [span]
    for low, high in taken:
        kept = []
        for a, b in parts:
            if high <= a or b <= low:
                kept.append((a, b))
                continue
            if a < low:
                kept.append((a, low))
            if high < b:
                kept.append((high, b))
        parts = kept
    return [(a, b) for a, b in parts if a < b]


def union(spans: Iterable[Span]) -> list[Span]:
    """The ranges merged where they meet or overlap, in order."""
    merged: list[Span] = []
    for low, high in sorted(s for s in spans if s[0] < s[1]):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def windows(
    extents: Iterable[tuple[str, str, str, str, bool]],
) -> dict[tuple[str, bool], list[Span]]:
    """Per (metric, imported): the ranges of starts whose points were counted late only
    because of an import, from the deliveries' extents in received order (delivery,
    metric, first start, last start, whether an import)."""
    old_bar: dict[str, str] = {}
    new_bar: dict[str, str] = {}
    held_by_imports: dict[str, list[Span]] = defaultdict(list)
    found: dict[tuple[str, bool], list[Span]] = defaultdict(list)
    by_delivery: dict[str, list[tuple[str, str, str, bool]]] = {}
    for delivery, metric, first, last, imported in extents:
        by_delivery.setdefault(delivery, []).append((metric, first, last, imported))
    for brought in by_delivery.values():  # in received order (dicts keep it)
        for metric, first, last, imported in brought:
            bar = old_bar.get(metric)
            if bar is None:
                continue  # the first delivery of its metric: nothing was late
            high = min(bar, _after(last))
            if imported:
                for span in minus((first, high), held_by_imports[metric]):
                    found[(metric, True)].append(span)
            else:
                # after the HAE bar: the point at it is the one an earlier delivery brought
                low = max(first, _after(new_bar[metric])) if metric in new_bar else first
                if low < high:
                    found[(metric, False)].append((low, high))
        for metric, first, last, imported in brought:
            old_bar[metric] = max(old_bar.get(metric, last), last)
            if imported:
                held_by_imports[metric].append((first, _after(last)))
            else:
                new_bar[metric] = max(new_bar.get(metric, last), last)
    return {key: union(spans) for key, spans in found.items()}


def correct(sql: Statements, conn: Connection) -> None:
    """Take what imports made late off ``point_days.late``, for every account with an
    import (the rule above); accounts without one are left as they are."""
    counted = sql.render("late_import_days", day=sql["bucket_day"])
    accounts = [str(r[0]) for r in conn.execute(sql["late_import_accounts"], _IMPORTS).fetchall()]
    for account_id in accounts:
        params = {"account_id": account_id, **_IMPORTS}
        extents = [
            (str(d), str(m), str(first), str(last), bool(imp))
            for d, m, first, last, imp in conn.execute(
                sql["late_import_extents"], params
            ).fetchall()
        ]
        for (metric, imported), spans in sorted(windows(extents).items()):
            days: dict[str, int] = defaultdict(int)
            for low, high in spans:
                asked = params | {"metric": metric, "low": low, "high": high,
                                  "imported": int(imported)}  # fmt: skip
                for day, points in conn.execute(counted, asked).fetchall():
                    days[str(day)] += int(points)
            for day, points in sorted(days.items()):
                where = {"account_id": account_id, "metric": metric, "day": day}
                conn.execute(sql["late_import_unlate"], where | {"points": points})
