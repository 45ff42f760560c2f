"""Numbered migrations: SQL files per backend, applied in order, each recorded once.

The files live in ``journal/migrations/<backend>/NNNN_name.sql`` and ship as package
data. This module knows the files and the order; it knows no driver. An adapter opens
one transaction that excludes other migrators (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
a transaction-scoped advisory lock), wraps it in a ``Session`` and calls ``run``, so two
processes starting at once apply each migration exactly once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Protocol

from healthlog import log
from healthlog.errors import HealthlogError

logger = logging.getLogger("healthlog.journal")

# Portable DDL (SQLite and PostgreSQL): the adapter runs it inside the session's
# transaction before asking what was applied.
SCHEMA_MIGRATIONS_DDL = """\
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)"""

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


class Session(Protocol):
    """One open transaction on one database, holding the migrators' lock."""

    def applied(self) -> set[int]:
        """The versions recorded in ``schema_migrations``."""

    def apply(self, migration: Migration) -> None:
        """Run the migration's SQL and record its version, in the session's transaction."""


def load(backend: str) -> list[Migration]:
    """Every migration of ``backend``, in version order."""
    folder = resources.files("healthlog.journal").joinpath("migrations").joinpath(backend)
    if not folder.is_dir():
        raise HealthlogError(f"no migrations for backend {backend!r}")
    found: dict[int, Migration] = {}
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        match = _FILE_NAME.match(entry.name)
        if match is None:
            raise HealthlogError(f"migration file {entry.name!r} is not named NNNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise HealthlogError(f"two {backend} migrations have version {version}")
        found[version] = Migration(version, match.group(2), entry.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


def run(
    session: Session, migrations: Sequence[Migration], *, target: int | None = None
) -> list[Migration]:
    """Apply, in order, the migrations not applied yet (up to ``target``); return them."""
    done = session.applied()
    todo = [
        m
        for m in sorted(migrations, key=lambda m: m.version)
        if m.version not in done and (target is None or m.version <= target)
    ]
    for migration in todo:
        session.apply(migration)
    return todo


def head(migrations: Sequence[Migration]) -> int:
    """The newest version (0 when there are none)."""
    return max((m.version for m in migrations), default=0)


def log_applied(backend: str, applied: Sequence[Migration]) -> None:
    """Log what a ``run`` applied, once its transaction has committed (nothing if nothing)."""
    if applied:
        log.event(
            logger,
            logging.INFO,
            "journal.migrated",
            backend=backend,
            versions=[m.version for m in applied],
        )
