"""The journal and the archive a command works on: opened, checked, closed in one place.

``opened(settings, mode)`` is the one context manager every ``healthlog`` command opens
its journal (and, when it asks, its archive) with, and closes them on the way out:

* ``"read"``: the journal must exist and be at this healthlog's schema; nothing is
  written, not even a migration (an older schema is an error naming ``healthlog
  migrate``);
* ``"write"``: the journal must exist; it is migrated first;
* ``"create"``: the journal is made if it does not exist (``serve``, ``account add``)
  and migrated.

A journal that does not exist is never made silently: ``NoJournal`` names the path that
was looked at and how to point elsewhere (``HEALTHLOG_JOURNAL_URL``, or ``-C FOLDER``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from healthlog import urls
from healthlog.archive.port import Archive
from healthlog.config import DEFAULT_JOURNAL_URL, Settings
from healthlog.errors import HealthlogError
from healthlog.journal.port import Journal, ShowcaseReads

Mode = Literal["read", "write", "create"]


class NoJournal(HealthlogError):
    """There is no journal where the settings point."""


class SchemaBehind(HealthlogError):
    """The journal's schema is older than this healthlog reads."""


@dataclass
class Store:
    """An open journal, and the archive when it was asked for."""

    journal: Journal
    settings: Settings
    _archive: Archive | None = field(default=None, repr=False)

    @property
    def archive(self) -> Archive:
        assert self._archive is not None, "opened(..., archive=True) opens the archive"
        return self._archive


def where(settings: Settings) -> str:
    """Where the journal is, for a person: a SQLite file's absolute path, or 'PostgreSQL'."""
    location = urls.journal_location(settings.journal_url)
    if isinstance(location, urls.SqliteLocation):
        return os.path.abspath(location.path)
    if isinstance(location, urls.DriverLocation):
        return f"the {location.backend} database of HEALTHLOG_JOURNAL_URL"
    return "the PostgreSQL database of HEALTHLOG_JOURNAL_URL"


def exists(settings: Settings) -> bool:
    """Whether a SQLite journal's file exists (a PostgreSQL server is asked when opened)."""
    location = urls.journal_location(settings.journal_url)
    return not isinstance(location, urls.SqliteLocation) or os.path.isfile(location.path)


def schema_version(settings: Settings, journal: ShowcaseReads | None = None) -> int:
    """The newest migration applied to the journal; 0 for none (or no journal at all).

    Reads only, through the journal's own read-only session
    (``ShowcaseReads.schema_version``: a SQLite file opened read-only and never made,
    PostgreSQL in a read-only transaction); ``journal`` if it is open already.
    """
    if journal is not None:
        return journal.schema_version()
    from healthlog.ops import wiring

    opened = wiring.open_journal(settings)
    try:
        return opened.schema_version()
    finally:
        opened.close()


def head(settings: Settings) -> int:
    """The schema version this healthlog writes and reads."""
    from healthlog.journal import migrate

    backend = urls.backend_of(urls.journal_location(settings.journal_url))
    return migrate.head(migrate.load(backend))


def no_journal(settings: Settings) -> NoJournal:
    """The error for a journal that is not there: the path, and how to point elsewhere."""
    place = where(settings)
    default = settings.journal_url == DEFAULT_JOURNAL_URL
    relative = (
        f" (the default, {DEFAULT_JOURNAL_URL}, is relative to the folder it runs in: "
        f"{os.getcwd()})"
        if default
        else ""
    )
    return NoJournal(
        f"no journal at {place}{relative}. Run healthlog in the folder that holds var/, "
        "or point at the journal: healthlog -C FOLDER ... (the folder that holds var/), "
        "or HEALTHLOG_JOURNAL_URL=sqlite:////absolute/path.db (or postgresql://...). "
        "`healthlog serve` or `healthlog account add NAME` makes a new one."
    )


def check(settings: Settings, mode: Mode, journal: ShowcaseReads | None = None) -> None:
    """NoJournal or SchemaBehind when ``mode`` cannot work on the journal as it is
    (``journal``, if it is open already, is the one asked)."""
    if mode == "create":
        return
    if not exists(settings):
        raise no_journal(settings)
    if mode == "write":
        return
    version = schema_version(settings, journal)
    if version == 0:
        raise no_journal(settings)
    wanted = head(settings)
    if version < wanted:
        raise SchemaBehind(
            f"the journal's schema is at version {version} and this healthlog reads "
            f"{wanted}: run `healthlog migrate` once (read-only commands never write)"
        )


@contextlib.contextmanager
def opened(settings: Settings, mode: Mode, *, archive: bool = False) -> Iterator[Store]:
    """The journal (and the archive if asked), checked for ``mode``; closed on exit."""
    from healthlog.ops import wiring

    if not exists(settings) and mode != "create":
        raise no_journal(settings)
    journal = wiring.open_journal(settings)
    with contextlib.ExitStack() as stack:
        stack.callback(journal.close)
        check(settings, mode, journal)
        if mode != "read":
            journal.migrate()
        store = Store(journal, settings)
        if archive:
            store._archive = wiring.open_archive(settings)
            stack.callback(store._archive.close)
        yield store
