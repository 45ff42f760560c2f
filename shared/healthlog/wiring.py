"""From Settings to adapters: the one place that picks an adapter for a URL.

Adapters are imported inside their branch, so a process that runs on SQLite and a
local folder never imports psycopg or boto3, and a cold start pays only for what it
uses.
"""

from __future__ import annotations

from healthlog.archive.port import Archive
from healthlog.config import ENV_PREFIX, Settings
from healthlog.errors import ConfigError
from healthlog.ingest import IngestDeps
from healthlog.journal.port import Journal
from healthlog.wake import HttpWaker, LambdaWaker, NullWaker, Waker


def open_journal(settings: Settings) -> Journal:
    """The journal named by ``settings.journal_url``, not yet migrated."""
    url = settings.journal_url
    if url.startswith("sqlite://"):
        from healthlog.journal.sqlite import SqliteJournal

        return SqliteJournal.from_url(
            url, busy_timeout_ms=settings.busy_timeout_ms, retries=settings.journal_retries
        )
    if url.startswith(("postgresql://", "postgres://")):
        from healthlog.journal.postgres import PostgresJournal

        # one setting for both backends: how long a statement waits on a lock
        return PostgresJournal.from_url(
            url,
            lock_timeout_ms=max(1, settings.busy_timeout_ms),
            retries=settings.journal_retries,
        )
    raise ConfigError("the journal URL must start with sqlite:/// or postgresql://")


def open_archive(settings: Settings) -> Archive:
    """The archive named by ``settings.archive_url`` (a folder or an S3 bucket)."""
    from healthlog.archive.open import open_archive as open_by_url

    return open_by_url(settings.archive_url, s3_endpoint_url=settings.s3_endpoint_url)


def make_waker(settings: Settings) -> Waker:
    """Lambda invoke in AWS, a POST on the local stack, else nothing (the tick heals)."""
    if settings.fold_function_name:
        return LambdaWaker(settings.fold_function_name)
    if settings.fold_url:
        try:
            return HttpWaker(settings.fold_url)
        except ValueError as exc:
            raise ConfigError(f"{ENV_PREFIX}FOLD_URL: {exc}") from None
    return NullWaker()


def ingest_deps(settings: Settings) -> IngestDeps:
    """Everything ingest needs, built once per process; the journal is not migrated."""
    return IngestDeps(
        journal=open_journal(settings),
        archive=open_archive(settings),
        waker=make_waker(settings),
        settings=settings,
    )
