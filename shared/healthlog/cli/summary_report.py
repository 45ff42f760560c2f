"""``healthlog summary`` for a person: a line a metric, as the dashboard's home page.

The numbers are ``Reads.summary``'s (docs/dashboard.md, "Summary": today, the last 7
days, the trend of the last 90 days against the year); names and units are a person's
(``healthlog.reads.display``). Only metric names, days and numbers are printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from healthlog.reads import Direction, Glance, Kind
from healthlog.reads.shapes import card_names

ARROWS = {Direction.UP: "↑ higher", Direction.DOWN: "↓ lower", Direction.STEADY: "→ steady"}


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:,.{digits}f} {unit}".strip()


def text(cards: Sequence[Glance], today: date) -> str:
    """The human report: a metric a line (today, the last 7 days), then its trend."""
    if not cards:
        return f"no data in the year up to {today.isoformat()}"
    lines = [f"summary of {today.isoformat()} (today: its value; 7 days: today and the 6 before)"]
    width = max(len(card_names(c)[0]) for c in cards)
    for card in cards:
        name, unit = card_names(card)
        if card.today is not None:
            now = f"today {_value(card.today, unit)}"
        elif card.last_day is not None:
            now = f"last {card.last_day.isoformat()}: {_value(card.last_value, unit)}"
        else:
            now = "today –"
        if not card.week_days:
            week = "nothing in the last 7 days"
        elif card.kind is Kind.CUMULATIVE:
            week = f"7 days {_value(card.week, unit)} ({_value(card.week_per_day, unit)} a day)"
        else:
            week = f"7 days average {_value(card.week, unit)}"
        trend = ""
        if card.trend is not None:
            t = card.trend
            trend = (
                f"; {ARROWS[t.direction]}: {_value(t.recent, unit)} a day over 90 days,"
                f" {_value(t.year, unit)} over the year"
            )
        lines.append(f"{name:<{width}}  {now}; {week}{trend}")
    return "\n".join(lines)
