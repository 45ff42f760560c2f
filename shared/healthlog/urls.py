"""The journal and archive URLs, read here and nowhere else, into small typed locations.

    sqlite:///relative/path.db, sqlite:////absolute/path.db    SqliteLocation(path)
    postgresql://user:pw@host:5432/db?sslmode=... (postgres://)  PostgresLocation(url)
    <backend>://...                                            DriverLocation(backend, url)
    file://relative/folder, file:///absolute/folder            FolderLocation(path)
    s3://bucket, s3://bucket/prefix                            S3Location(bucket, prefix)

Reading a URL opens nothing, imports no driver and does not look at the disk or the
working directory (another backend's URL is looked up in the package's own files, for
its driver module and SQL file: docs/database.md, "A new backend"). ``Settings.validate``
reads both URLs (so a malformed one stops a command before it starts), and
``healthlog.ops.wiring`` opens the adapter a location names. What the adapters themselves
refuse (a SQLite path such as ``:memory:``, a PostgreSQL server that cannot be reached)
they still refuse when opened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from healthlog.errors import ConfigError

_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")
_FILE = "file://"
_S3 = "s3://"
_BACKEND = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class SqliteLocation:
    """A SQLite journal: its file, relative to the working directory or absolute."""

    path: str


@dataclass(frozen=True)
class PostgresLocation:
    """A PostgreSQL journal: libpq's URL as given (it may carry the password)."""

    url: str = field(repr=False)  # never in a repr, a log line or a traceback


@dataclass(frozen=True)
class FolderLocation:
    """An archive folder, as written: relative to the working directory or absolute."""

    path: Path


@dataclass(frozen=True)
class S3Location:
    """An archive in an S3 bucket, optionally under a key prefix."""

    bucket: str
    prefix: str = ""


@dataclass(frozen=True)
class DriverLocation:
    """A journal of another backend: ``<backend>://...``, where ``healthlog.journal`` has
    the backend's driver module (``<backend>.py``) and its SQL file (``sql/<backend>.sql``);
    the URL is the driver's to read (``open_url``), passed on whole."""

    backend: str
    url: str = field(repr=False)


JournalLocation = SqliteLocation | PostgresLocation | DriverLocation
ArchiveLocation = FolderLocation | S3Location


def journal_location(url: str) -> JournalLocation:
    """Where ``url`` (``Settings.journal_url``) keeps the journal; ConfigError if nowhere."""
    if url.startswith("sqlite://"):
        if not url.startswith(_SQLITE) or url == _SQLITE:
            raise ConfigError(
                "a SQLite journal URL is sqlite:///relative/path.db or sqlite:////abs/path.db"
            )
        return SqliteLocation(url.removeprefix(_SQLITE))
    if url.startswith(_POSTGRES):
        return PostgresLocation(url)
    backend, scheme, _ = url.partition("://")
    if scheme and has_driver(backend):
        return DriverLocation(backend, url)
    raise ConfigError("the journal URL must start with sqlite:/// or postgresql://")


def has_driver(backend: str) -> bool:
    """Whether ``healthlog.journal`` has a driver module and a SQL file named ``backend``
    (looked for in the package's files; nothing is imported but the package itself)."""
    if not _BACKEND.fullmatch(backend):
        return False
    from importlib import resources, util

    sql = resources.files("healthlog.journal").joinpath("sql", f"{backend}.sql")
    return sql.is_file() and util.find_spec(f"healthlog.journal.{backend}") is not None


def backend_of(location: JournalLocation) -> str:
    """The backend a journal location names: its SQL file's and migrations' name."""
    if isinstance(location, SqliteLocation):
        return "sqlite"
    if isinstance(location, PostgresLocation):
        return "postgres"
    return location.backend


def archive_location(url: str) -> ArchiveLocation:
    """Where ``url`` (``Settings.archive_url``) keeps the bodies; ConfigError if nowhere."""
    if url.startswith(_FILE):
        path = url.removeprefix(_FILE)
        if not path:
            raise ConfigError("a file:// archive URL needs a path")
        return FolderLocation(Path(path))
    if url.startswith(_S3):
        bucket, _, prefix = url.removeprefix(_S3).partition("/")
        if not bucket:
            raise ConfigError("an s3:// archive URL needs a bucket")
        return S3Location(bucket, prefix)
    raise ConfigError("the archive URL must start with file:// or s3://")
