"""From Settings to adapters: the one place that opens an adapter for a location.

``healthlog.urls`` reads the URLs; this opens what they name. Adapters are imported
inside their branch, so a process that runs on SQLite and a local folder never imports
psycopg or boto3, and a cold start pays only for what it uses
(tests/unit/test_cold_start.py checks it).
"""

from __future__ import annotations

import importlib
from typing import assert_never

from healthlog import urls
from healthlog.archive.port import Archive
from healthlog.config import ENV_PREFIX, Settings
from healthlog.errors import ConfigError
from healthlog.ingest import IngestDeps
from healthlog.ingest.wake import HttpWaker, LambdaWaker, NullWaker, Waker
from healthlog.journal.port import Journal


def open_journal(settings: Settings) -> Journal:
    """The journal named by ``settings.journal_url``, not yet migrated."""
    location = urls.journal_location(settings.journal_url)
    match location:
        case urls.SqliteLocation(path):
            from healthlog.journal.sqlite import SqliteJournal

            return SqliteJournal(
                path, busy_timeout_ms=settings.busy_timeout_ms, retries=settings.journal_retries
            )
        case urls.PostgresLocation(url):
            from healthlog.journal.postgres import PostgresJournal

            # one setting for both backends: how long a statement waits on a lock
            return PostgresJournal(
                url,
                lock_timeout_ms=max(1, settings.busy_timeout_ms),
                retries=settings.journal_retries,
            )
        case urls.DriverLocation(backend, url):
            # another backend: its driver module opens its URL (docs/database.md,
            # "A new backend")
            module = importlib.import_module(f"healthlog.journal.{backend}")
            journal: Journal = module.open_url(
                url, busy_timeout_ms=settings.busy_timeout_ms, retries=settings.journal_retries
            )
            return journal
        case _:
            assert_never(location)


def open_archive(settings: Settings) -> Archive:
    """The archive named by ``settings.archive_url`` (a folder or an S3 bucket)."""
    location = urls.archive_location(settings.archive_url)
    match location:
        case urls.FolderLocation(path):
            from healthlog.archive.local import LocalArchive

            # resolved now, so that a later chdir cannot move the archive
            return LocalArchive(path.absolute())
        case urls.S3Location(bucket, prefix):
            from healthlog.archive.s3 import S3Archive

            return S3Archive(bucket, prefix, endpoint_url=settings.s3_endpoint_url)
        case _:
            assert_never(location)


def make_waker(settings: Settings) -> Waker:
    """Lambda invoke in AWS, a POST on the local stack, else nothing (the tick heals)."""
    if settings.fold_function_name:
        return LambdaWaker(settings.fold_function_name)
    if settings.fold_url:
        try:
            return HttpWaker(settings.fold_url, secret=settings.fold_secret)
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
