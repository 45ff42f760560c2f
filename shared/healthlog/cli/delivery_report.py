"""What ``status``, ``deliveries``, ``fold``, ``replay`` and ``reconcile`` print.

Each report has a dict (``--json``) and a text for a person; a delivery's dict is the
dashboard's too (``healthlog.reads.shapes.delivery_dict``). Text from a body (section
names, uncovered keys) goes through ``terminal.shown``; yes and no are words, not
Python's ``True``/``False``; sizes and counts are grouped by thousands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from healthlog import ids
from healthlog.fold.classify import CRASHED
from healthlog.journal.port import Summary
from healthlog.model import Delivery
from healthlog.reads.shapes import delivery_dict as delivery_dict  # deliveries --json
from healthlog.terminal import shown

OUTCOMES = ("parsed", "partial", "failed", "deferred")


def yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def status_dict(summary: Summary, bodies_removed: int = 0) -> dict[str, Any]:
    age = None
    if summary.oldest_pending is not None:
        age = round((ids.now() - summary.oldest_pending).total_seconds(), 3)
    return {
        "counts": summary.counts,
        "backlog": summary.backlog,
        "oldest_pending_age_s": age,
        "last_delivery": summary.last_delivery.isoformat() if summary.last_delivery else None,
        "uncovered": summary.uncovered,
        "points": summary.points,
        "records": summary.records,
        "failures": summary.failures,
        "bodies_removed": bodies_removed,
    }


def status_text(summary: Summary, bodies_removed: int = 0) -> str:
    data = status_dict(summary, bodies_removed)
    lines = [
        "deliveries: " + ", ".join(f"{k} {v:,}" for k, v in summary.counts.items()),
        f"backlog: {summary.backlog:,}"
        + (f" (oldest waiting {data['oldest_pending_age_s']} s)" if summary.oldest_pending else ""),
        f"last delivery: {data['last_delivery'] or 'none yet'}",
        f"points in the showcase: {summary.points:,}",
    ]
    if summary.records:
        lines.append(
            "records in the showcase: "
            + ", ".join(f"{shown(section)} {n:,}" for section, n in sorted(summary.records.items()))
        )
    if summary.failures:
        lines.append(
            "failed by class: "
            + ", ".join(f"{shown(k or '-')} {n}" for k, n in sorted(summary.failures.items()))
        )
    if summary.failures.get(CRASHED):
        lines.append(
            f"  {summary.failures[CRASHED]} crashed: their folds killed the process, their last"
            " try alone too; after a fix, re-fold them: healthlog replay --failure crashed"
        )
    if bodies_removed:
        lines.append(
            f"bodies removed by retention: {bodies_removed:,} (parsed deliveries; their"
            " showcase stays, replay and a rebuild from the archive skip them)"
        )
    if summary.uncovered:
        lines.append(
            "uncovered keys: "
            + ", ".join(f"{shown(k)} ({n})" for k, n in summary.uncovered.items())
        )
    return "\n".join(lines)


_HEAD = (
    "received (UTC)", "id", "status", "size", "points", "records", "uncovered", "failure", "body",
)  # fmt: skip


def deliveries_text(rows: Sequence[Delivery]) -> str:
    """A table with a header: one delivery a line, newest first as given; ``body`` says
    ``removed`` for those whose bodies retention removed (``body_removed_at``)."""
    if not rows:
        return "no deliveries"
    table = [
        (
            d.received_at.strftime("%Y-%m-%d %H:%M:%S"),
            d.id,
            d.status.value,
            f"{d.size:,} B",
            f"{d.points:,}",
            f"{d.records:,}",
            shown(",".join(d.uncovered)) or "-",
            d.failure or "-",
            "kept" if d.body_removed_at is None else "removed",
        )
        for d in rows
    ]
    widths = [max(len(r[i]) for r in [_HEAD, *table]) for i in range(len(_HEAD))]
    right = {3, 4, 5}
    return "\n".join(
        "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in [_HEAD, *table]
    )


def _counts(data: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {data.get(k, 0):,}" for k in OUTCOMES)


def fold_text(data: Mapping[str, Any]) -> str:
    return f"folded {data.get('selected', 0):,} deliveries: {_counts(data)}"


def replay_text(data: Mapping[str, Any]) -> str:
    dry = bool(data["dry_run"])
    verb = "would re-fold" if dry else "re-folded"
    changed = "" if dry else f"; showcase changed: {yes_no(data['showcase_changed'])}"
    text = (
        f"{verb} {data['selected']:,} deliveries: {_counts(data)}; "
        f"status changes {data['status_changes']:,}{changed}"
    )
    gone = int(data.get("skipped_body_removed", 0))
    if gone:
        text += (
            f"\nskipped {gone:,} whose bodies retention removed: nothing to re-fold,"
            " their outcomes and showcase stay as they are"
        )
    return text


def reconcile_text(data: Mapping[str, Any]) -> str:
    return (
        f"archived bodies: {data['seen']:,}; journalled now: {data['journalled']:,}; "
        f"already journalled: {data['present']:,}; skipped: {data['skipped']:,}; "
        f"leftovers of interrupted writes removed: {data['swept']:,}"
    )


def retention_text(data: Mapping[str, Any]) -> str:
    before = f"parsed deliveries received before {data['before']}"
    if data["dry_run"]:
        lines = [f"would remove {data['due']:,} bodies of {before}; nothing removed"]
    else:
        lines = [f"removed {data['removed']:,} bodies of {before}"]
        if data["kept"]:
            lines.append(f"kept {data['kept']:,} that a replay made other than parsed meanwhile")
    if data["removed_before"] and data["dry_run"]:
        lines.append(f"removed by earlier runs: {data['removed_before']:,}")
    elif data["removed_before"]:
        lines.append(
            f"deleted again {data['removed_before']:,} that an earlier run marked removed "
            "without seeing them deleted (interrupted, or before this version)"
        )
    return "\n".join(lines)


def import_text(data: Mapping[str, Any]) -> str:
    """What ``healthlog import`` did, for a person: where it is and what it folded."""
    size_mb = data["size"] / 1_000_000
    lines = [f"stored as delivery {data['delivery_id']} ({size_mb:,.1f} MB, {data['kind']})"]
    if data["outcome"] is None:
        lines.append(
            f"status: {data['status']} (not folded now: the next fold pass folds it,"
            " or run `healthlog fold`)"
        )
    else:
        lines.append(
            f"status: {data['status']}; points: {data['points']:,}; records: {data['records']:,}"
        )
        if data.get("repeated"):
            lines.append(
                f"{data['repeated']:,} samples were in the export more than once exactly:"
                " each is kept once"
            )
    if data["status"] == "pending" and data["outcome"] is not None:
        lines.append("the fold paused at its time budget: the next pass goes on from there")
    if data["uncovered"]:
        kinds = ", ".join(
            f"{shown(name)} ({count:,})" for name, count in sorted(data["uncovered"].items())
        )
        lines.append(f"kept but not read yet (types, elements): {kinds}")
    if data["unreadable"]:
        total = sum(data["unreadable"].values())
        lines.append(f"elements that could not be read: {total:,} (--json lists them by type)")
    if data["cut"]:
        lines.append(
            "the export is cut short: what was read is folded, the rest could not be read"
            f" ({_cut_text(data['cut'])})"
        )
    if data["failure"]:
        lines.append(f"failure: {shown(str(data['failure']))}")
        if data.get("refused"):
            lines.append(f"why: {shown(str(data['refused']))}")
    return "\n".join(lines)


def import_fault(data: Mapping[str, Any]) -> str | None:
    """Why an import's exit status is not 0, in one line, or None when it is.

    An import that ended ``failed``, that folded nothing at all, or whose export.xml is
    cut or not well-formed (what was read before the fault is folded, the rest is not)
    is a fault a script must see; an import not folded now (``--no-fold``, another fold
    at work, paused at its budget) is not.
    """
    if data["status"] == "failed":
        why = data.get("refused") or data.get("failure")
        return f"the import failed: {shown(str(why))}"
    if data["outcome"] is None or data["status"] == "pending":
        return None
    if data["cut"]:
        at = data["cut"].get("at") if isinstance(data["cut"], dict) else None
        return f"the export is not read to its end: {shown(str(at or 'cut short'))}"
    if not (data["points"] or data["records"] or data.get("repeated")):
        return "the import folded nothing: the export holds no sample healthlog reads"
    return None


def _cut_text(cut: object) -> str:
    """Where an export was cut, for a person: what the reader said, and how far it read."""
    if not isinstance(cut, dict):
        return shown(str(cut))
    at, read, size = cut.get("at"), cut.get("bytes_read"), cut.get("xml_size")
    said = shown(str(at)) if at else "cut"
    if isinstance(read, int) and isinstance(size, int) and size:
        said += f"; {read:,} of export.xml's {size:,} bytes read"
    return said
