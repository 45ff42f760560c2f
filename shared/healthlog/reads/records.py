"""The sections other than metrics and workouts: their records and record counts.

``RecordReads``: a section's records in a range, each as plain values (``record_dict``),
and the sections an account has (``sections``, ``require_section``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson

from healthlog.clock import Moment
from healthlog.model import Record
from healthlog.reads.base import Base
from healthlog.reads.bounds import _bound, local_text
from healthlog.reads.values import UnknownName, unknown_name


class RecordReads(Base):
    """The reads of records."""

    def records(
        self,
        section: str,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        with_items: bool = False,
    ) -> list[dict[str, Any]]:
        """The records of a section other than metrics, as dicts a page or a model reads."""
        return [
            record_dict(stored.record)
            for stored in self.journal.export_records(
                account_id=self.account.id,
                section=section,
                start_from=_bound(start),
                start_to=_bound(end),
                with_items=with_items,
            )
        ]

    def sections(self) -> dict[str, int]:
        """The sections other than metrics that the account has, with their records."""
        return dict(sorted(self.journal.summary(self.account.id).records.items()))

    def require_section(self, section: str) -> int:
        """The records of ``section``; UnknownName (naming the nearest) if it has none."""
        have = self.sections()
        if section not in have:
            raise UnknownName(unknown_name("section", section, sorted(have)))
        return have[section]


def record_dict(record: Record) -> dict[str, Any]:
    """A record as plain values: times with their offset, the body as JSON, items by series."""
    out: dict[str, Any] = {
        "section": record.section,
        "identity": record.identity,
        "name": record.name,
        "start": local_text(record.start, record.utc_offset),
        "end": local_text(record.end, record.utc_offset),
        "source": record.source,
        "body": orjson.loads(record.body),
    }
    if record.items:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item in record.items:
            grouped[item.series].append(
                {
                    k: v
                    for k, v in (
                        ("t", local_text(item.t, record.utc_offset)),
                        ("qty", item.qty),
                        ("lat", item.lat),
                        ("lon", item.lon),
                        ("alt", item.alt),
                        ("unit", item.unit),
                    )
                    if v is not None
                }
            )
        out["series"] = dict(grouped)
    return out
