"""The sections other than metrics and workouts: their records and record counts.

``RecordReads``: a section's records in a range, each as ``shapes.record_dict`` gives it,
and the sections an account has (``sections``, ``require_section``).
"""

from __future__ import annotations

from typing import Any

from healthlog.clock import Moment
from healthlog.reads.base import Base
from healthlog.reads.bounds import _bound
from healthlog.reads.shapes import Show, as_is, record_dict
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
        show: Show = as_is,
    ) -> list[dict[str, Any]]:
        """The records of a section other than metrics, as dicts a page or a model reads;
        ``show``: how their times are shown (default: with the phone's offset)."""
        return [
            record_dict(stored.record, show)
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
