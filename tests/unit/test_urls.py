"""The journal and archive URLs: read by ``healthlog.urls``, opened by ``healthlog.ops.wiring``.

The parser is tested alone (what each URL names, and the refusals with their reasons),
then through ``Settings`` (a bad URL stops a command at start, naming the variable) and
``wiring`` (the adapter a location names, built without ``from_url``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from healthlog import urls
from healthlog.archive.local import LocalArchive
from healthlog.archive.s3 import S3Archive
from healthlog.config import Settings
from healthlog.errors import ConfigError
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import wiring
from healthlog.urls import (
    DriverLocation,
    FolderLocation,
    PostgresLocation,
    S3Location,
    SqliteLocation,
    archive_location,
    has_driver,
    journal_location,
)

# --- the journal ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///var/healthlog.db", "var/healthlog.db"),
        ("sqlite:////srv/healthlog/journal.db", "/srv/healthlog/journal.db"),
    ],
)
def test_a_sqlite_url_names_a_relative_or_an_absolute_path(url: str, expected: str) -> None:
    assert journal_location(url) == SqliteLocation(expected)


@pytest.mark.parametrize("url", ["sqlite:///", "sqlite://host/x.db", "sqlite://"])
def test_a_sqlite_url_without_a_file_path_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match=r"sqlite:///relative/path\.db or sqlite:////abs"):
        journal_location(url)


@pytest.mark.parametrize(
    "url", ["postgresql://u:secret@db:5432/healthlog?sslmode=require", "postgres://db/h"]
)
def test_a_postgresql_url_is_passed_on_whole_and_never_shown(url: str) -> None:
    location = journal_location(url)
    assert location == PostgresLocation(url)
    assert "secret" not in repr(location)


@pytest.mark.parametrize("url", ["mysql://h/db", "", "var/healthlog.db", "file:///x.db"])
def test_a_journal_url_of_another_kind_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="must start with sqlite:/// or postgresql://"):
        journal_location(url)


def test_sqlite_refuses_a_path_that_is_not_a_file_when_opened() -> None:
    # the URL reads; the adapter refuses what every pooled connection could not share
    assert journal_location("sqlite:///:memory:") == SqliteLocation(":memory:")
    with pytest.raises(ConfigError, match="needs a file path"):
        wiring.open_journal(Settings(journal_url="sqlite:///:memory:"))


def test_wiring_opens_the_sqlite_journal_with_the_settings(tmp_path: Path) -> None:
    settings = Settings(
        journal_url=f"sqlite:///{tmp_path}/j.db", busy_timeout_ms=10, journal_retries=1
    )
    journal = wiring.open_journal(settings)
    assert isinstance(journal, SqliteJournal)
    assert journal.path == f"{tmp_path}/j.db"
    journal.close()


@pytest.mark.parametrize(
    ("backend", "found"),
    [("sqlite", True), ("postgres", True), ("mysql", False), ("", False), ("../sql", False)],
)
def test_a_backend_has_a_driver_when_the_package_has_its_module_and_sql_file(
    backend: str, found: bool
) -> None:
    assert has_driver(backend) is found


def test_a_third_backend_is_opened_by_its_driver_modules_open_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/database.md, "A new backend": a URL ``<backend>://`` whose driver module and
    SQL file the package has is passed whole to the module's ``open_url``. The third
    backend here is a module of this test (the package has none), opening SQLite."""
    calls: list[tuple[str, int, int]] = []

    def open_url(url: str, *, busy_timeout_ms: int, retries: int) -> SqliteJournal:
        calls.append((url, busy_timeout_ms, retries))
        return SqliteJournal(url.removeprefix("demo://"), busy_timeout_ms=busy_timeout_ms)

    demo = types.ModuleType("healthlog.journal.demo")
    demo.open_url = open_url  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "healthlog.journal.demo", demo)
    monkeypatch.setattr(urls, "has_driver", lambda backend: backend == "demo")
    url = f"demo://{tmp_path}/j.db?secret=1"

    location = journal_location(url)
    journal = wiring.open_journal(Settings(journal_url=url, busy_timeout_ms=10, journal_retries=2))

    assert location == DriverLocation("demo", url) and "secret" not in repr(location)
    assert urls.backend_of(location) == "demo"
    assert calls == [(url, 10, 2)] and isinstance(journal, SqliteJournal)
    journal.close()


# --- the archive ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("file://var/archive", FolderLocation(Path("var/archive"))),
        ("file:///srv/archive", FolderLocation(Path("/srv/archive"))),
        ("s3://bodies", S3Location("bodies", "")),
        ("s3://bodies/prod/eu/", S3Location("bodies", "prod/eu/")),
    ],
)
def test_an_archive_url_names_a_folder_or_a_bucket(url: str, expected: object) -> None:
    assert archive_location(url) == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file://", "a file:// archive URL needs a path"),
        ("s3://", "an s3:// archive URL needs a bucket"),
        ("s3:///prefix", "an s3:// archive URL needs a bucket"),
        ("", "must start with file:// or s3://"),
        ("gs://bucket", "must start with file:// or s3://"),
        ("var", "must start with file:// or s3://"),
    ],
)
def test_an_unusable_archive_url_is_a_config_error(url: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        archive_location(url)
    with pytest.raises(ConfigError, match=reason):
        wiring.open_archive(Settings(archive_url=url))


def test_a_relative_file_url_is_under_the_working_directory_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    archive = wiring.open_archive(Settings(archive_url="file://var/archive"))
    monkeypatch.chdir("/")  # a later chdir does not move it
    assert isinstance(archive, LocalArchive)
    assert archive.root == tmp_path / "var" / "archive"


def test_an_absolute_file_url_is_that_folder(tmp_path: Path) -> None:
    archive = wiring.open_archive(Settings(archive_url=f"file://{tmp_path}/archive"))
    assert isinstance(archive, LocalArchive)
    assert archive.root == tmp_path / "archive"


@pytest.mark.parametrize(
    ("url", "bucket", "prefix"),
    [("s3://bodies", "bodies", ""), ("s3://bodies/prod/eu/", "bodies", "prod/eu/")],
)
def test_wiring_opens_an_s3_archive_on_the_bucket_and_prefix(
    url: str, bucket: str, prefix: str
) -> None:
    settings = Settings(archive_url=url, s3_endpoint_url="http://127.0.0.1:9")
    archive = wiring.open_archive(settings)
    assert isinstance(archive, S3Archive)
    assert (archive.bucket, archive.prefix) == (bucket, prefix)
    archive.close()


# --- the settings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("HEALTHLOG_JOURNAL_URL", "mysql://h/db", "must start with sqlite:/// or postgresql://"),
        ("HEALTHLOG_JOURNAL_URL", "sqlite:///", "sqlite:///relative/path.db"),
        ("HEALTHLOG_ARCHIVE_URL", "gs://bucket", "must start with file:// or s3://"),
        ("HEALTHLOG_ARCHIVE_URL", "s3://", "needs a bucket"),
    ],
)
def test_a_bad_url_stops_the_settings_naming_the_variable(
    variable: str, value: str, reason: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}: .*{reason}"):
        Settings.from_env({variable: value})
