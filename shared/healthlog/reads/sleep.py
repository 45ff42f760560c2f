"""Sleep per night: segments and aggregated nights, one source a night.

``SleepReads.sleep_nights``: a night labelled by the local date twelve hours after its
start, its hours per stage, from the source with the most sleep that night; a range holds
whole nights (``_night_within``). ``SleepReads.sleep_figures``: those nights with the
figures of ``reads.sleep_figures`` (bedtime, wake time, averages, their spread).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta
from typing import Any

import orjson

from healthlog import clock
from healthlog.clock import Moment, from_text
from healthlog.reads.base import Base
from healthlog.reads.bounds import _as_datetime, _as_given, _moved, local_text
from healthlog.reads.sleep_figures import SleepFigures, figures
from healthlog.reads.values import Night, _asleep_h


class SleepReads(Base):
    """The reads of sleep."""

    def sleep_nights(
        self, *, start: Moment | None = None, end: Moment | None = None
    ) -> list[Night]:
        """Sleep per night: aggregated nights as sent, segments summed per stage.

        A night is labelled by the local date of its start plus twelve hours (a night
        that starts at 23:00 or at 02:00 belongs to the morning after). Where several
        sources report one night, the one with the most sleep is kept; a source that sent
        the night both as segments and aggregated counts once (the shape with more sleep).
        A segment sent without ``qty`` counts for its ``end`` minus its start; an
        aggregated night that has only ``totalSleep`` counts it as ``asleep``.

        A range ``[start, end)`` holds the nights whose label's midnight (on the bound's
        own clock) is in it, each whole: its segments are read from two days either side
        of the range (a night's label is within a day of its segments' starts, on any
        offset), so a night is never cut where the range begins or ends.
        """
        low, high = _as_given(start), _as_given(end)
        nights: dict[tuple[str, str, bool], dict[str, Any]] = {}
        for stored in self.journal.export_points(
            account_id=self.account.id,
            metric="sleep_analysis",
            start_from=_moved(_as_datetime(low), -_NIGHT_REACH),
            start_to=_moved(_as_datetime(high), _NIGHT_REACH),
        ):
            p = stored.point
            local = clock.local_of(p.start, p.utc_offset)
            label = (local + timedelta(hours=12)).date().isoformat()
            segment = p.field == "segment"
            night = nights.setdefault(
                (label, p.source, segment),
                {"stages": defaultdict(float), "start": None, "end": None, "total": 0.0},
            )
            span = (p.start, p.end or p.start, p.utc_offset) if segment else _night_span(p.extra)
            if span is not None:
                first, last, offset = span
                if night["start"] is None or first < night["start"][0]:
                    night["start"] = (first, offset)
                if night["end"] is None or last > night["end"][0]:
                    night["end"] = (last, offset)
            hours = p.qty
            if hours is None and segment and p.end is not None:
                hours = (from_text(p.end) - from_text(p.start)).total_seconds() / 3600
            if p.field == "totalSleep" and hours is not None:
                night["total"] += hours
            stage = _stage(p.field, p.text)
            if stage is not None and hours is not None:
                night["stages"][stage] += hours
        best: dict[str, Night] = {}
        for (label, source, _), night in sorted(nights.items()):
            if not _night_within(label, low, high):
                continue
            stages = night["stages"]
            if night["total"] > 0 and not _asleep_h(stages):
                stages["asleep"] += night["total"]
            candidate = Night(
                label,
                source,
                {k: round(v, 4) for k, v in sorted(stages.items())},
                None if night["start"] is None else local_text(*night["start"]),
                None if night["end"] is None else local_text(*night["end"]),
            )
            kept = best.get(label)
            if kept is None or (candidate.asleep_h, source) > (kept.asleep_h, kept.source):
                best[label] = candidate
        return [best[label] for label in sorted(best)]

    def sleep_figures(
        self, *, start: Moment | None = None, end: Moment | None = None
    ) -> SleepFigures:
        """The nights of ``sleep_nights`` with their figures: time in bed, bedtime and
        wake time, the 7-day average, and the 7- and 30-day windows' averages and the
        spread of bedtime and wake time (``sleep_figures``, docs/dashboard.md)."""
        return figures(self.sleep_nights(start=start, end=end))


#: how far from a range's ends the segments of a night it holds may start: a night's
#: label is the local date twelve hours after a segment's start, and an offset is under a
#: day, so two days holds every segment of every night labelled in the range
_NIGHT_REACH = timedelta(days=2)


def _night_within(label: str, first: datetime | None, last: datetime | None) -> bool:
    """Whether the night labelled ``label`` (``yyyy-MM-dd``) is in ``[first, last)``: its
    label's midnight, on each bound's own clock (the phone's for a naive bound)."""
    day = date.fromisoformat(label)
    for bound, after in ((first, True), (last, False)):
        if bound is None:
            continue
        midnight = datetime(day.year, day.month, day.day, tzinfo=bound.tzinfo)
        if (midnight < bound) if after else (midnight >= bound):
            return False
    return True


_STAGES = {
    "deep": "deep",
    "core": "core",
    "rem": "rem",
    "awake": "awake",
    "asleep": "asleep",
    "inbed": "in_bed",
    "in bed": "in_bed",
    "in_bed": "in_bed",
    "asleepunspecified": "asleep",
}


def _stage(field_: str, text: str | None) -> str | None:
    """The stage a sleep point stands for (None: a total, counted by its stages)."""
    if field_ == "segment":
        return _STAGES.get((text or "").strip().lower())
    if field_ == "totalSleep":
        return None
    return _STAGES.get(field_.lower())


def _night_span(extra: str | None) -> tuple[str, str, int | None] | None:
    """An aggregated night's sleepStart and sleepEnd (kept in ``extra`` as sent) as UTC
    text, with sleepStart's offset; None when it did not send both."""
    if extra is None:
        return None
    from healthlog.hae import dates

    sent = orjson.loads(extra)
    try:
        first, offset = dates.instant(sent["sleepStart"])
        last = dates.instant(sent["sleepEnd"])[0]
    except (KeyError, TypeError, ValueError):
        return None
    return first, last, offset
