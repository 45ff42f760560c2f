"""The names the showcase holds: ``healthlog metrics``, and checks of a typed name.

``listing`` gives, per account, every metric field with its unit, kind, point count and
first and last start (``Reads.catalog``), and every other section with its records.
``text`` prints it for a person. ``check_metric`` and ``check_section`` turn a name
that is not there into ``UnknownName`` naming the nearest ones, over one account or all
of them, so ``export --metric heartrate`` is an error, not an empty file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from healthlog.hae import sections as hae_sections
from healthlog.hae import workouts
from healthlog.journal.port import ShowcaseReads
from healthlog.model import Account
from healthlog.reads import Reads, UnknownName, shapes, unknown_name
from healthlog.terminal import shown

_LISTED = " (`healthlog metrics` lists them all)"


def _accounts(journal: ShowcaseReads, account_id: str | None) -> list[Account]:
    return [a for a in journal.accounts() if account_id is None or a.id == account_id]


def listing(journal: ShowcaseReads, account_id: str | None = None) -> list[dict[str, Any]]:
    """Per account (one, or all): its metric fields and its sections' record counts."""
    found = []
    for account in _accounts(journal, account_id):
        reads = Reads(journal, account)
        metrics = [shapes.field_dict(info) for info in reads.catalog()]
        found.append(
            {
                "account": account.name,
                "account_id": account.id,
                "metrics": metrics,
                "sections": reads.sections(),
            }
        )
    return found


def _minute(utc_text: str) -> str:
    """``2026-01-02T07:00:00.000000Z`` as ``2026-01-02 07:00Z``."""
    return utc_text[:10] + " " + utc_text[11:16] + "Z"


def text(found: Sequence[dict[str, Any]]) -> str:
    """The listing as a table per account."""
    if not found:
        return "no accounts"
    out: list[str] = []
    for entry in found:
        if out:
            out.append("")
        out.append(f"account {shown(entry['account'])}")
        metrics = entry["metrics"]
        if not metrics:
            out.append("  no metric data")
        else:
            rows = [
                (shown(m["metric"]), shown(m["field"]), shown(m["unit"]), f"{m['points']:,}",
                 _minute(m["first"]), _minute(m["last"]))
                for m in metrics
            ]  # fmt: skip
            head = ("metric", "field", "unit", "points", "first (UTC)", "last (UTC)")
            widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
            for r in [head, *rows]:
                cells = [
                    c.rjust(w) if i == 3 else c.ljust(w)
                    for i, (c, w) in enumerate(zip(r, widths, strict=True))
                ]
                out.append("  " + "  ".join(cells).rstrip())
        sections = entry["sections"]
        if sections:
            out.append("  records: " + ", ".join(f"{shown(s)} {n:,}" for s, n in sections.items()))
    return "\n".join(out)


def check_metric(journal: ShowcaseReads, account_id: str | None, metric: str) -> None:
    """UnknownName, naming the nearest, unless an account (or the one) has ``metric``."""
    names: set[str] = set()
    for account in _accounts(journal, account_id):
        names.update(info.metric for info in Reads(journal, account).catalog())
    if metric not in names:
        raise UnknownName(unknown_name("metric", metric, sorted(names)) + _LISTED)


#: every section a delivery or an import folds records into: HAE's event sections, its
#: workouts and HRV beats, and the Health export's own food and activity rings
KNOWN_SECTIONS = frozenset(
    {*hae_sections.SPECS, workouts.SPEC.section, "heartbeatSeries", "food", "activitySummary"}
)


def check_section(journal: ShowcaseReads, account_id: str | None, section: str) -> bool:
    """Whether an account (or the one) has ``section``: False for a section healthlog
    folds that none holds yet (a script asking for it gets an empty answer); UnknownName,
    naming the nearest, for a name that is no section at all."""
    names: set[str] = set()
    for account in _accounts(journal, account_id):
        names.update(Reads(journal, account).sections())
    if section in names:
        return True
    if section in KNOWN_SECTIONS:
        return False
    raise UnknownName(unknown_name("section", section, sorted(names)) + _LISTED)
