"""A metric's names: the catalog of an account's metric fields and the field a name means.

``CatalogReads``: every metric field with its unit, kind, sources and extent (``catalog``),
a metric's fields (``metric_fields``, ``field_names``; ``UnknownName`` naming the nearest
for a name the account has not) and the field that stands for a metric (``main_field``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from healthlog.journal.port import CatalogEntry
from healthlog.reads.base import Base
from healthlog.reads.values import MAIN_FIELDS, MetricInfo, UnknownName, kind_of, unknown_name


class CatalogReads(Base):
    """The reads of a metric's names: the catalog, a metric's fields, its main field."""

    def catalog(self) -> list[MetricInfo]:
        """Every metric field the account has, with its unit, kind, sources and extent."""
        grouped: dict[tuple[str, str, str], list[CatalogEntry]] = defaultdict(list)
        for entry in self.journal.catalog(self.account.id):
            grouped[(entry.metric, entry.field, entry.unit)].append(entry)
        return [
            MetricInfo(
                metric=metric,
                field=field_,
                unit=unit,
                kind=kind_of(metric),
                points=sum(e.points for e in entries),
                first=min(e.first for e in entries),
                last=max(e.last for e in entries),
                sources=tuple(sorted({e.source for e in entries})),
            )
            for (metric, field_, unit), entries in sorted(grouped.items())
        ]

    def metric_fields(
        self, metric: str, catalog: Sequence[MetricInfo] | None = None
    ) -> list[MetricInfo]:
        """The fields of ``metric``; UnknownName (naming the nearest) if it has none.

        ``catalog``: the account's ``catalog()`` when the caller has read it already (a
        read that looks up several fields or metrics reads it once).
        """
        if catalog is None:
            catalog = self.catalog()
        found = [info for info in catalog if info.metric == metric]
        if not found:
            names = sorted({info.metric for info in catalog})
            raise UnknownName(unknown_name("metric", metric, names))
        return found

    def field_names(self, metric: str, catalog: Sequence[MetricInfo] | None = None) -> list[str]:
        """The names of ``metric``'s fields, each once (a field stored in two units is one
        field), in ``metric_fields``' order."""
        return list(dict.fromkeys(info.field for info in self.metric_fields(metric, catalog)))

    def main_field(
        self,
        metric: str,
        field_: str | None = None,
        *,
        catalog: Sequence[MetricInfo] | None = None,
    ) -> MetricInfo:
        """The field asked for, or the one that stands for the metric."""
        fields = self.metric_fields(metric, catalog)
        by_name: dict[str, MetricInfo] = {}
        for info in fields:  # a field sent in two units: the unit with more points
            if info.field not in by_name or info.points > by_name[info.field].points:
                by_name[info.field] = info
        if field_ is not None:
            if field_ not in by_name:
                raise UnknownName(unknown_name(f"field of {metric}", field_, sorted(by_name)))
            return by_name[field_]
        first = [by_name[name] for name in ("qty", "avg") if name in by_name]
        if first:
            return max(first, key=lambda info: info.points)  # qty wins a tie
        for name in MAIN_FIELDS:
            if name in by_name:
                return by_name[name]
        return fields[0]
