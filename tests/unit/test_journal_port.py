"""The Journal port in parts: a read-only caller's type reaches no write (issue 23).

mypy proves it where the types are (``journal/port.py``'s ``_reads_cannot_write``: an
attribute error told to be ignored for each write, which strict mypy fails on when it is
not needed); this holds the same at run time, over the protocols themselves, and that
the read side is given the read protocol.
"""

from __future__ import annotations

import typing

from healthlog.journal import port
from healthlog.journal.core import SqlJournal
from healthlog.reads.base import Base


def members(protocol: type) -> set[str]:
    return {name for name in dir(protocol) if not name.startswith("_")}


def test_the_read_protocol_holds_no_write_and_no_token_hash() -> None:
    reads = members(port.ShowcaseReads)

    assert reads.isdisjoint(port.WRITES)
    assert "token_hash" not in reads
    assert {"export_points", "summary", "guarded_session", "schema_version"} <= reads


def test_every_write_is_the_ports_and_the_journal_is_every_part() -> None:
    whole = members(port.Journal)
    parts = (port.Accounts, port.Queue, port.Watch, port.Retention, port.ShowcaseReads)

    assert set(port.WRITES) <= whole
    assert whole == set().union(*(members(part) for part in parts)) | {"migrate"}
    assert members(port.Journal) <= members(SqlJournal)


def test_the_read_side_is_given_the_read_protocol() -> None:
    hints = typing.get_type_hints(Base.__init__)

    assert hints["journal"] is port.ShowcaseReads
