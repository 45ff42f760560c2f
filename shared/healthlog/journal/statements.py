"""Named SQL statements: one file per dialect, ``journal/sql/<backend>.sql``, loaded once.

A file is a run of statements, each under two lines, the way procrastinate keeps its
``queries.sql``::

    -- pending_page --
    -- Pending deliveries strictly after a cursor, in (received_at, id) order.
    SELECT ...

The first line names the statement, the second says in one line what it does; what
follows, up to the next name, is the statement (further comment lines included).
Lines before the first name are the file's preamble.

A statement may hold *slots*, ``/*name*/`` comments where the journal core puts a fixed
fragment of its own making (a filter, ``DESC``, a ``LIMIT``); values are always bound
parameters. An unfilled slot is only a comment, so such a statement is valid SQL as
written. A slot the statement cannot do without (the bucket a summary groups by) is
written ``/*name!*/``, and ``render`` refuses to leave it empty; what fills it is one of
the dialect's own expressions, itself a named statement of the file.

Why not aiosql, which loads files like these: it also wants to run the statements,
and ours run inside the journal's own transactions, with COPY, server-side cursors and
retries it does not know; its loader alone would be more code to adapt than this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources

from healthlog.errors import HealthlogError

_HEADER = re.compile(r"^-- ([a-z][a-z0-9_]*) --$")
_SLOT = re.compile(r"/\*([a-z]+)(!?)\*/")


@dataclass(frozen=True, slots=True)
class Statement:
    name: str
    description: str
    text: str
    slots: frozenset[str]
    required: frozenset[str] = frozenset()


class Statements(Mapping[str, str]):
    """A dialect's statements by name (``statements["pending_page"]`` is its SQL)."""

    def __init__(self, backend: str, statements: Iterable[Statement], param: str) -> None:
        self.backend = backend
        self._param = param
        self._by_name: dict[str, Statement] = {}
        for statement in statements:
            if statement.name in self._by_name:
                raise HealthlogError(f"{backend}.sql names {statement.name!r} twice")
            self._by_name[statement.name] = statement

    @classmethod
    def load(cls, backend: str, *, param: str, required: Iterable[str] = ()) -> Statements:
        """The statements of ``sql/<backend>.sql``; every ``required`` name must be there.

        ``param`` is how the driver spells a named parameter, with ``{}`` for the name:
        ``:{}`` (sqlite3) or ``%({})s`` (psycopg).
        """
        source = resources.files("healthlog.journal").joinpath("sql", f"{backend}.sql")
        statements = cls(backend, parse(backend, source.read_text(encoding="utf-8")), param)
        missing = sorted(set(required) - set(statements))
        if missing:
            raise HealthlogError(f"{backend}.sql lacks the statements {', '.join(missing)}")
        return statements

    def __getitem__(self, name: str) -> str:
        return self._by_name[name].text

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def statement(self, name: str) -> Statement:
        return self._by_name[name]

    def param(self, name: str) -> str:
        """A named parameter as this dialect's driver spells it."""
        return self._param.format(name)

    def render(self, name: str, **fragments: str) -> str:
        """The statement with its slots filled (a slot not given stays a comment)."""
        statement = self._by_name[name]
        unknown = set(fragments) - statement.slots
        if unknown:
            raise ValueError(f"{name} has no slot {', '.join(sorted(unknown))}")
        missing = statement.required - set(fragments)
        if missing:
            raise ValueError(f"{name} needs its slot {', '.join(sorted(missing))} filled")
        if not fragments:
            return statement.text
        return _SLOT.sub(lambda m: fragments.get(m.group(1), m.group(0)), statement.text)


def parse(backend: str, text: str) -> list[Statement]:
    """The statements of one file's text, in file order."""
    found: list[Statement] = []
    name: str | None = None
    description = ""
    body: list[str] = []

    def close() -> None:
        if name is None:
            return
        sql = "\n".join(body).strip()
        if not sql:
            raise HealthlogError(f"{backend}.sql: {name} has no statement")
        slots = _SLOT.findall(sql)
        found.append(
            Statement(
                name,
                description,
                sql,
                frozenset(slot for slot, _ in slots),
                frozenset(slot for slot, must in slots if must),
            )
        )

    lines = iter(text.splitlines())
    for line in lines:
        header = _HEADER.match(line.rstrip())
        if header is None:
            if name is not None:
                body.append(line)
            continue
        close()
        name, body = header.group(1), []
        second = next(lines, "")
        if not second.startswith("-- ") or _HEADER.match(second.rstrip()):
            raise HealthlogError(f"{backend}.sql: {name} has no one-line description")
        description = second.removeprefix("-- ").strip()
    close()
    return found
