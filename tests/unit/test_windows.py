"""The ranges D, W, M, 6M, Y and All (healthlog.reads.windows): their days, their
resolution, and the arrows that move them."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from healthlog.reads import Kind, Resolution
from healthlog.reads.windows import BadSpan, Span, span_named, window
from hypothesis import given
from hypothesis import strategies as st

DAYS = st.dates(min_value=date(2000, 1, 1), max_value=date(2090, 12, 31))
SPANS = st.sampled_from([s for s in Span if s is not Span.ALL])


@pytest.mark.parametrize(
    ("span", "start", "end", "per"),
    [
        (Span.DAY, "2026-03-31", "2026-04-01", Resolution.HOUR),
        (Span.WEEK, "2026-03-25", "2026-04-01", Resolution.DAY),
        (Span.MONTH, "2026-03-01", "2026-04-01", Resolution.DAY),
        # Monday 29 September to the Monday after the anchor's week
        (Span.HALF_YEAR, "2025-09-29", "2026-04-06", Resolution.WEEK),
        (Span.YEAR, "2025-04-01", "2026-04-01", Resolution.MONTH),
    ],
)
def test_each_span_is_its_days_at_its_resolution(
    span: Span, start: str, end: str, per: Resolution
) -> None:
    w = window(span, date(2026, 3, 31))
    assert (w.start, w.end) == (date.fromisoformat(start), date.fromisoformat(end))
    assert w.resolution(Kind.CUMULATIVE) is per


def test_a_month_back_from_a_long_month_ends_on_the_shorter_months_last_day() -> None:
    # 30 April less a month is 30 March: the window starts the day after
    assert window(Span.MONTH, date(2026, 4, 30)).start == date(2026, 3, 31)
    # 31 March less a month is 28 February (2026 is no leap year)
    assert window(Span.MONTH, date(2026, 3, 31)).earlier == date(2026, 2, 28)
    assert window(Span.MONTH, date(2024, 3, 30)).start == date(2024, 3, 1)


def test_a_discrete_metric_takes_the_spans_resolution_but_a_day_follows_the_zoom() -> None:
    assert window(Span.MONTH, date(2026, 3, 31)).resolution(Kind.DISCRETE) is Resolution.DAY
    assert window(Span.DAY, date(2026, 3, 31)).resolution(Kind.DISCRETE) is None
    everything = window(Span.ALL, date(2026, 3, 31))
    assert (everything.start, everything.end, everything.earlier, everything.later) == (
        None,
        None,
        None,
        None,
    )


@given(SPANS, DAYS)
def test_a_window_holds_its_anchor_and_the_one_before_ends_where_it_starts(
    span: Span, anchor: date
) -> None:
    w = window(span, anchor)
    assert w.start is not None and w.end is not None
    assert w.start <= anchor < w.end
    assert w.earlier is not None and w.later is not None
    before = window(span, w.earlier)
    assert before.end == w.start
    after = window(span, w.later)
    assert after.start is not None and after.start > w.start and after.end > w.end
    # no day is skipped between a window and the next
    assert after.start <= w.end


@given(SPANS, DAYS, st.integers(0, 400), st.integers(0, 400))
def test_the_arrows_stop_where_the_data_does(
    span: Span, anchor: date, before: int, after: int
) -> None:
    first, last = anchor - timedelta(days=before), anchor + timedelta(days=after)
    w = window(span, anchor, first, last)
    assert w.start is not None and w.end is not None
    assert (w.earlier is None) == (first >= w.start)
    assert (w.later is None) == (last < w.end)


def test_a_span_is_named_as_the_health_app_names_it() -> None:
    assert [span_named(t) for t in ("d", "W", " m ", "6m", "Y", "all")] == list(Span)
    with pytest.raises(BadSpan, match=r"range: one of D, W, M, 6M, Y, All \(not 'Q'\)"):
        span_named("Q")
