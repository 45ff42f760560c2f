"""The journal and archive URLs, read here and nowhere else, into small typed locations.

    sqlite:///relative/path.db, sqlite:////absolute/path.db    SqliteLocation(path)
    postgresql://user:pw@host:5432/db?sslmode=... (postgres://)  PostgresLocation(url)
    file://relative/folder, file:///absolute/folder            FolderLocation(path)
    s3://bucket, s3://bucket/prefix                            S3Location(bucket, prefix)

Reading a URL opens nothing, imports no driver and does not look at the disk or the
working directory: ``Settings.validate`` reads both URLs (so a malformed one stops a
command before it starts), and ``healthlog.wiring`` opens the adapter a location names.
What the adapters themselves refuse (a SQLite path such as ``:memory:``, a PostgreSQL
server that cannot be reached) they still refuse when opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from healthlog.errors import ConfigError

_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")
_FILE = "file://"
_S3 = "s3://"


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


JournalLocation = SqliteLocation | PostgresLocation
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
    raise ConfigError("the journal URL must start with sqlite:/// or postgresql://")


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
