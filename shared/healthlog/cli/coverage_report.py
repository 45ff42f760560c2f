"""``healthlog coverage`` for a person: a line per metric, its gaps; ``--days``: each day.

The numbers come from ``Reads.coverage`` (days on the phone's clock, the gap rule
``reads.find_gaps``, late points from ``Journal.late_points``); docs/dashboard.md, "Data
coverage", explains them. Only metric names, days and counts are printed.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from datetime import date

from healthlog.reads import DAILY_SHARE, STRETCH_BREAK_DAYS, Coverage, Gap
from healthlog.reads.coverage import resend_advice
from healthlog.terminal import shown


def _wrapped(text: str, width: int = 84) -> str:
    """``text`` in lines of ``width``, the app's button names ("Manual Export") kept whole."""
    kept = text.replace("Manual Export", "Manual\u00a0Export")
    return textwrap.fill(kept, width=width).replace("\u00a0", " ")


def span_days(coverage: Coverage) -> int:
    """Days from the first day with data to the last, both counted (0 without data)."""
    if coverage.first_day is None or coverage.last_day is None:
        return 0
    first, last = date.fromisoformat(coverage.first_day), date.fromisoformat(coverage.last_day)
    return (last - first).days + 1


def _days(n: int) -> str:
    return f"{n} day" + ("" if n == 1 else "s")


def _when(gap: Gap) -> str:
    return gap.first if gap.first == gap.last else f"{gap.first} .. {gap.last}"


def text(found: Sequence[Coverage], *, per_day: bool = False, resend_hint: bool = True) -> str:
    """The human report: one line per metric, then its gaps in one line each (the
    count, their days, the latest); ``per_day`` (``--days``): every gap on a line of its
    own, and the late points of each day."""
    if not found:
        return "no metric data (in this range)"
    width = max(len("metric"), *(len(shown(c.metric)) for c in found))
    lines = [
        f"{'metric':<{width}}  {'first day':<10}  {'last day':<10}  "
        f"{'days':>5}  {'span':>5}  {'gaps':>4}  {'late':>5}"
    ]
    for c in found:
        gaps = str(len(c.gaps)) if c.daily or c.gaps else "-"
        lines.append(
            f"{shown(c.metric):<{width}}  {c.first_day or '':<10}  {c.last_day or '':<10}  "
            f"{len(c.days):>5}  {span_days(c):>5}  {gaps:>4}  {c.late_points:>5}"
        )
    lines.append(
        "(days: days with data; span: first to last day, both counted; gaps: runs of days\n"
        f" without data inside a stretch of data (no silence over {STRETCH_BREAK_DAYS} days) "
        f"that has data on\n at least {DAILY_SHARE:.0%} of its days; '-': the latest stretch "
        "has not, so a day without data is\n no gap; late: samples HAE brought long after "
        "their time)"
    )
    with_gaps = [c for c in found if c.gaps]
    if with_gaps and not per_day:
        lines += ["", "Gaps (--days lists each one, and the late points per day):"]
        for c in with_gaps:
            total = sum(g.days for g in c.gaps)
            many = f"{len(c.gaps)} gap" + ("" if len(c.gaps) == 1 else "s")
            latest = c.gaps[-1]
            lines.append(
                f"  {shown(c.metric):<{width}}  {many}, {_days(total)}; "
                f"latest {_when(latest)} ({_days(latest.days)})"
            )
    if with_gaps and per_day:
        lines += ["", "Gaps (days without data between two days with data):"]
        for c in with_gaps:
            for gap in c.gaps:
                lines.append(f"  {shown(c.metric):<{width}}  {_when(gap):<24}  {_days(gap.days)}")
    late = [c for c in found if c.late]
    if late and per_day:
        lines += [
            "",
            "Late points per day (older than what an earlier HAE delivery of the metric",
            'brought: an export "Since Last Sync" would have missed them):',
        ]
        for c in late:
            for day, count in sorted(c.late.items()):
                lines.append(f"  {shown(c.metric):<{width}}  {day}  {count:>6}")
    if with_gaps and resend_hint:
        lines += ["", _wrapped(resend_advice())]
    return "\n".join(lines)
