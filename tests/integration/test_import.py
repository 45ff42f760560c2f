"""The import of the Health app's export, end to end, against real journals and archives.

``healthlog.ops.importer.import_export`` on SQLite and PostgreSQL, with the local archive and
S3 (moto's server over HTTP): the export archived byte for byte, journalled as a
delivery of its own content type, folded in steps by the same fold, with the same
outcomes; refusals that store nothing; a cut file; a replay; a rebuild from the
archive; a pass that pauses an import for its budget and one that goes on after a
failed step. The exports are made by ``tests.export_gen``.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import signal
import time
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from healthlog.applehealth import read_export
from healthlog.archive.keys import EXPORT_XML, EXPORT_ZIP
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.archive.s3 import PART_SIZE, S3Archive
from healthlog.cli import delivery_report
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.replay import replay
from healthlog.fold.service import make_player
from healthlog.fold.steps import CUT
from healthlog.hae.records import CAPS
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account, OutcomeClass, ParseStatus, Point, Record
from healthlog.ops import importer
from healthlog.ops.reconcile import reconcile
from healthlog.testing import FaultyJournal

from tests import export_gen, pg
from tests.unit import test_expansion_caps as caps

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: the fixture's elements with no mapping, and how many of each
FIXTURE_UNCOVERED = {
    "Audiogram": 1,
    "HKCategoryTypeIdentifierAudioExposureEvent": 2,
    "HKDataTypeSleepDurationGoal": 1,
}
#: small steps, so that every import here folds in many of them
STEP_POINTS = 7


@dataclass
class Stores:
    journal: Journal
    archive: Archive
    settings: Settings
    account: Account

    def import_(self, path: Path, **kw: object) -> importer.ImportReport:
        return importer.import_export(
            path,
            journal=self.journal,
            archive=self.archive,
            settings=self.settings,
            account_id=self.account.id,
            **kw,  # type: ignore[arg-type]
        )


def open_stores(
    journal_kind: str,
    archive_kind: str,
    folder: Path,
    resources: ExitStack,
    request: pytest.FixtureRequest,
) -> Stores:
    journal: Journal
    if journal_kind == "sqlite":
        journal = SqliteJournal(str(folder / "journal.db"))
    else:
        journal = PostgresJournal(resources.enter_context(pg.fresh_database()))
    resources.callback(journal.close)
    journal.migrate()
    archive: Archive
    if archive_kind == "local":
        archive = LocalArchive(folder / "archive")
    else:
        client: S3Client = request.getfixturevalue("s3_client")
        bucket = f"import-{uuid.uuid4().hex[:16]}"
        client.create_bucket(Bucket=bucket)
        archive = S3Archive(bucket, "bodies", client=client)
    account = journal.add_account("alice", "hash-of-alice", account_id="acc-alice")
    return Stores(journal, archive, Settings(fold_step_points=STEP_POINTS), account)


@pytest.fixture(
    params=[
        ("sqlite", "local"),
        ("sqlite", "s3"),
        pytest.param(("postgres", "local"), marks=pytest.mark.postgres),
        pytest.param(("postgres", "s3"), marks=pytest.mark.postgres),
    ],
    ids=lambda p: "-".join(p),
)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    journal_kind, archive_kind = request.param
    with ExitStack() as resources:
        yield open_stores(journal_kind, archive_kind, tmp_path, resources, request)


@pytest.fixture
def local(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    """SQLite and a local folder: for what does not depend on the stores."""
    with ExitStack() as resources:
        yield open_stores("sqlite", "local", tmp_path, resources, request)


def read_directly(path: Path) -> tuple[list[Point], list[Record]]:
    """What the reader gives for the export, as the showcase holds it: by key, last wins."""
    points: dict[tuple[str, str, str, str], Point] = {}
    found: dict[tuple[str, str], Record] = {}
    with read_export(path) as reading:
        for batch in reading.batches():
            for p in batch.points:
                points[(p.metric, p.start, p.field, p.source)] = p
            for r in batch.records:
                found[(r.section, r.identity)] = r
    return sorted(points.values()), sorted(found.values())


def showcase(journal: Journal) -> tuple[list[Point], list[Record]]:
    return (
        sorted(p.point for p in journal.export_points()),
        sorted(r.record for r in journal.export_records()),
    )


# --- it is a delivery ----------------------------------------------------------------------


def test_a_zip_is_archived_byte_for_byte_journalled_and_folded_in_steps(
    stores: Stores, tmp_path: Path
) -> None:
    extra = export_gen.minutes(export_gen.T0, 30)
    path = export_gen.fixture_zip(tmp_path / "export.zip", *extra)
    heard: list[importer.ImportProgress] = []

    report = stores.import_(path, progress=heard.append)

    assert stores.archive.read(report.archive_key) == path.read_bytes()
    delivery = stores.journal.get_delivery(report.delivery_id)
    assert delivery is not None
    assert (delivery.content_type, delivery.size) == (EXPORT_ZIP, path.stat().st_size)
    assert report.archive_key.endswith(f"/{report.delivery_id}.zip")
    # the same outcome as any delivery: partial, the uncovered types as keys
    assert report.outcome is not None and report.outcome.klass is OutcomeClass.PARTIAL
    assert delivery.status is ParseStatus.PARTIAL
    assert delivery.uncovered == tuple(sorted(FIXTURE_UNCOVERED))
    assert report.uncovered == FIXTURE_UNCOVERED and report.unreadable == {}
    # folded in many steps, to what reading the export gives
    points, found = read_directly(path)
    assert showcase(stores.journal) == (points, found)
    assert delivery.points == report.points > len(extra)
    assert report.points >= len(points)
    assert {r.section for r in found} >= {"workouts", "ecg", "activitySummary", "food"}
    summary = stores.journal.summary()
    assert summary.counts["partial"] == 1 and summary.points == len(points)
    # progress: the archive phase to the file's size, then the fold's steps
    phases = [h.phase for h in heard]
    assert phases.index("fold") > 0 and set(phases[phases.index("fold") :]) == {"fold"}
    assert heard[phases.index("fold") - 1].bytes_done == path.stat().st_size
    folds = [h for h in heard if h.phase == "fold"]
    assert len(folds) > 10 and folds[-1].points == report.points
    assert [h.bytes_done for h in folds] == sorted(h.bytes_done for h in folds)


def test_a_replay_of_an_import_gives_the_same_showcase(stores: Stores, tmp_path: Path) -> None:
    path = export_gen.fixture_zip(tmp_path / "export.zip", *export_gen.minutes(export_gen.T0, 20))
    report = stores.import_(path)
    before = stores.journal.fingerprint()
    days = stores.journal.metric_days(account_id=stores.account.id)
    catalog = stores.journal.catalog(stores.account.id)

    player = make_player(stores.journal, stores.archive, stores.settings)
    with stores.journal.fold_lock(5) as held:
        assert held
        done = replay(stores.journal, player)

    assert done.showcase_changed is False and done.status_changes == 0
    assert dict(done.tally.classes) == {"partial": 1}
    assert stores.journal.fingerprint() == before
    assert stores.journal.metric_days(account_id=stores.account.id) == days
    assert stores.journal.catalog(stores.account.id) == catalog
    stored = stores.journal.get_delivery(report.delivery_id)
    assert stored is not None and (stored.fold_position, stored.points) == (0, report.points)


def test_a_folder_is_archived_as_the_zip_of_its_files_and_a_bare_xml_as_it_is(
    local: Stores, tmp_path: Path
) -> None:
    folder = tmp_path / "unzipped" / "apple_health_export"
    shutil.copytree(export_gen.FIXTURE, folder, ignore=shutil.ignore_patterns("*.md", "*_dtd.xml"))
    from_folder = local.import_(folder.parent)

    assert from_folder.kind == "folder" and from_folder.archive_key.endswith(".zip")
    stored = tmp_path / "stored.zip"
    stored.write_bytes(local.archive.read(from_folder.archive_key))
    with zipfile.ZipFile(stored) as zipped:
        members = {n: zipped.read(n) for n in zipped.namelist()}
    files = {
        f"apple_health_export/{p.relative_to(folder).as_posix()}": p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file()
    }
    assert members == files  # every file, byte for byte
    assert from_folder.uncovered == FIXTURE_UNCOVERED and from_folder.unreadable == {}
    assert showcase(local.journal) == read_directly(folder)

    bare = tmp_path / "export.xml"
    bare.write_bytes(export_gen.fixture_xml())
    from_xml = local.import_(bare)
    assert from_xml.kind == "xml" and from_xml.archive_key.endswith(".xml")
    assert local.archive.read(from_xml.archive_key) == bare.read_bytes()
    delivery = local.journal.get_delivery(from_xml.delivery_id)
    assert delivery is not None and delivery.content_type == EXPORT_XML
    # no routes beside a bare export.xml: the workout's route could not be read
    assert from_xml.unreadable == {"WorkoutRoute": 1}
    assert "WorkoutRoute" in delivery.uncovered


def test_a_large_body_goes_to_s3_in_parts_and_is_read_back_streamed(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with ExitStack() as resources:
        stores = open_stores("sqlite", "s3", tmp_path, resources, request)
        stores.settings = replace(stores.settings, fold_step_points=50_000)
        path = tmp_path / "export.xml"
        path.write_bytes(export_gen.export_xml(export_gen.minutes(export_gen.T0, 22_000)))
        assert path.stat().st_size > PART_SIZE  # more than one part

        report = stores.import_(path)

        assert stores.archive.read(report.archive_key) == path.read_bytes()
        assert isinstance(stores.archive, S3Archive)
        uploads = stores.archive.client.list_multipart_uploads(Bucket=stores.archive.bucket)
        assert not uploads.get("Uploads")
        assert report.status is ParseStatus.PARSED and report.points == 22_000 * 5


# --- what is not an export, or too large, stores nothing ------------------------------------


def refused(stores: Stores, path: Path, match: str) -> None:
    with pytest.raises(importer.ImportRefused, match=match) as raised:
        stores.import_(path)
    assert list(stores.archive.keys()) == [] and stores.journal.deliveries() == []
    assert "Test" not in str(raised.value)


def test_what_is_not_an_export_is_refused_with_a_clear_error(local: Stores, tmp_path: Path) -> None:
    junk = tmp_path / "export.zip"
    junk.write_bytes(b"PK\x03\x04 not really a zip")
    refused(local, junk, "neither a zip nor an XML export")
    without = export_gen.write_zip(tmp_path / "other.zip", b"", folder="x")
    with zipfile.ZipFile(without, "w") as z:
        z.writestr("apple_health_export/export_cda.xml", b"<ClinicalDocument/>")
    refused(local, without, "holds no export.xml")
    empty = tmp_path / "empty"
    empty.mkdir()
    refused(local, empty, "holds no export.xml")
    # XML that is not the Health app's export: a workout route, any other document
    route = tmp_path / "route.gpx"
    route.write_bytes(
        (export_gen.FIXTURE / "workout-routes" / "route_2024-03-30_8.02am.gpx").read_bytes()
    )
    refused(local, route, "neither a zip nor an XML export")
    other = tmp_path / "export.xml"
    other.write_bytes(b'<?xml version="1.0"?>\n<HealthDataX locale="en"/>\n')
    refused(local, other, "whose root is HealthData")
    refused(local, tmp_path / "nowhere.zip", "cannot read")


@pytest.mark.parametrize("name", ["../evil.gpx", "apple_health_export/../../evil", "/etc/evil"])
def test_a_zip_with_a_path_that_leaves_it_is_refused(
    local: Stores, tmp_path: Path, name: str
) -> None:
    path = export_gen.fixture_zip(tmp_path / "export.zip", members={name: b"<gpx/>"})
    refused(local, path, "path that leaves the export")


def test_a_zip_bomb_is_refused_by_what_it_expands_to(local: Stores, tmp_path: Path) -> None:
    local.settings = replace(local.settings, max_import_bytes=4 * 1024 * 1024)
    bomb = export_gen.fixture_zip(
        tmp_path / "export.zip", members={"apple_health_export/padding.bin": bytes(8 * 2**20)}
    )
    assert bomb.stat().st_size < 100_000  # small on disk, eight MiB of zeros inside
    refused(local, bomb, r"expands to \d+ bytes, over the import limit of 4194304")
    big = tmp_path / "export.xml"
    big.write_bytes(export_gen.export_xml(export_gen.minutes(export_gen.T0, 9000)))
    refused(local, big, "over the import limit")


# --- outcomes --------------------------------------------------------------------------------


def test_a_cut_file_folds_what_it_could_and_says_how_much_it_could_not(
    stores: Stores, tmp_path: Path
) -> None:
    whole = export_gen.export_xml(export_gen.minutes(export_gen.T0, 200))
    path = tmp_path / "export.xml"
    path.write_bytes(whole[: len(whole) * 2 // 3])

    report = stores.import_(path)

    assert report.status is ParseStatus.PARTIAL and report.cut is not None
    assert CUT in report.outcome.uncovered  # type: ignore[union-attr]
    assert 0 < report.cut["bytes_read"] <= report.cut["xml_size"] == path.stat().st_size
    assert "cut short" in report.cut["at"] and "Test" not in report.cut["at"]
    # and a person reads it as a sentence, not a Python dict
    said = delivery_report.import_text(report.as_dict())
    read, size = report.cut["bytes_read"], report.cut["xml_size"]
    assert f"{report.cut['at']}; {read:,} of export.xml's {size:,} bytes read)" in said
    assert "{" not in said and "bytes_read" not in said
    # what came before the cut is there, what came after is not
    assert 0 < report.points < 200 * 5
    assert stores.journal.summary().points == report.points


def test_an_export_xml_that_is_not_xml_fails_and_writes_nothing(
    local: Stores, tmp_path: Path
) -> None:
    path = export_gen.write_zip(tmp_path / "export.zip", b"<<< not XML at all")
    report = local.import_(path)
    assert (report.status, report.failure, report.points) == (ParseStatus.FAILED, "unreadable", 0)
    assert local.journal.summary().points == 0


def test_odd_values_are_counted_per_type_and_make_the_import_partial(
    local: Stores, tmp_path: Path
) -> None:
    elements = export_gen.odd_quantities(random.Random(11), 400)
    path = export_gen.write_zip(tmp_path / "export.zip", export_gen.export_xml(elements))
    report = local.import_(path)
    with read_export(path) as reading:
        for _ in reading.batches():
            pass
    assert report.unreadable == dict(reading.unreadable) != {}
    delivery = local.journal.get_delivery(report.delivery_id)
    assert delivery is not None and delivery.status is ParseStatus.PARTIAL
    assert set(delivery.uncovered) == set(reading.unreadable)


# --- the import among the other deliveries ------------------------------------------------


def test_a_rebuild_from_the_archive_includes_the_import(stores: Stores, tmp_path: Path) -> None:
    path = export_gen.fixture_zip(tmp_path / "export.zip", *export_gen.minutes(export_gen.T0, 10))
    report = stores.import_(path)
    fresh = SqliteJournal(str(tmp_path / "rebuilt.db"))
    try:
        fresh.migrate()
        fresh.add_account("alice", "hash-of-alice", account_id=stores.account.id)
        assert reconcile(fresh, stores.archive).journalled == 1
        rebuilt = fresh.get_delivery(report.delivery_id)
        assert rebuilt is not None and rebuilt.content_type == EXPORT_ZIP
        FoldPass(fresh, make_player(fresh, stores.archive, stores.settings)).pass_once()
        assert fresh.fingerprint() == stores.journal.fingerprint()
        assert fresh.summary().counts == stores.journal.summary().counts
    finally:
        fresh.close()


def test_a_pass_pauses_an_import_for_its_budget_and_the_next_goes_on(
    local: Stores, tmp_path: Path
) -> None:
    path = export_gen.write_zip(
        tmp_path / "export.zip", export_gen.export_xml(export_gen.minutes(export_gen.T0, 40))
    )
    report = local.import_(path, fold=False)
    assert report.status is ParseStatus.PENDING and report.outcome is None
    fold = FoldPass(local.journal, make_player(local.journal, local.archive, local.settings))
    asked = [0]

    def time_left() -> float:
        asked[0] += 1
        return 10.0 if asked[0] < 5 else 0.0  # the budget runs out after a few steps

    paused = fold.pass_once(time_left=time_left, margin_s=1.0)
    assert dict(paused.tally.classes) == {"deferred": 1}
    assert dict(paused.tally.reasons) == {"Paused": 1}
    halfway = local.journal.get_delivery(report.delivery_id)
    assert halfway is not None and halfway.status is ParseStatus.PENDING
    assert halfway.fold_position > 0 and 0 < halfway.points < 200
    assert halfway.attempts == 0  # a pause is no crash

    done = fold.pass_once()
    assert dict(done.tally.classes) == {"parsed": 1}
    assert showcase(local.journal) == read_directly(path)
    assert sum(n for *_, n in local.journal.metric_days(account_id=local.account.id)) == 200


def test_a_step_that_fails_leaves_the_import_pending_and_the_next_fold_goes_on(
    local: Stores, tmp_path: Path
) -> None:
    path = export_gen.write_zip(
        tmp_path / "export.zip", export_gen.export_xml(export_gen.minutes(export_gen.T0, 40))
    )
    faulty = FaultyJournal(local.journal)
    stored = importer.archive_export(
        importer.inspect(path, max_bytes=local.settings.max_import_bytes),
        faulty,
        local.archive,
        account_id=local.account.id,
    )

    def busy_after_three(step: importer.ImportProgress) -> None:
        if step.points >= 3 * STEP_POINTS:
            faulty.fail("write_step", times=1)

    first = importer.fold_import(
        faulty,
        local.archive,
        local.settings,
        stored.delivery_id,
        progress=busy_after_three,
    )
    assert first is not None and (first.klass, first.reason) == (
        OutcomeClass.DEFERRED,
        "JournalBusy",
    )
    halfway = local.journal.get_delivery(stored.delivery_id)
    assert halfway is not None and halfway.fold_position > 0 and halfway.attempts == 0

    second = importer.fold_import(local.journal, local.archive, local.settings, stored.delivery_id)
    assert second is not None and second.klass is OutcomeClass.PARSED
    assert second.points == 200
    assert showcase(local.journal) == read_directly(path)
    assert sum(n for *_, n in local.journal.metric_days(account_id=local.account.id)) == 200
    assert [e.points for e in local.journal.catalog(local.account.id)] == [40] * 5


def test_the_logs_name_no_source_and_no_value(
    local: Stores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cut = export_gen.fixture_xml(*export_gen.minutes(export_gen.T0, 5))
    path = tmp_path / "export.xml"
    path.write_bytes(cut[: len(cut) - 300])
    with caplog.at_level(logging.DEBUG, logger="healthlog"):
        local.import_(path)
    text = caplog.text
    assert "import.stored" in text and "fold.export_cut" in text
    for secret in ("Ada", "Test’s", "iPhone", "Watch", "1985", "Sinus"):
        assert secret not in text


def test_a_local_copy_a_killed_fold_left_is_removed_by_the_next(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold killed while it held an S3 body's local copy leaves it (no cleanup runs);
    one older than any fold takes is removed by the next copy, a recent one is not."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    with ExitStack() as resources:
        stores = open_stores("sqlite", "s3", tmp_path, resources, request)
        stale, recent = temp / "healthlog-body-stale", temp / "healthlog-body-recent"
        for folder in (stale, recent):
            folder.mkdir()
            (folder / "body").write_bytes(b"x" * 1000)
        old = time.time() - 7 * 3600
        os.utime(stale, (old, old))
        stores.archive.put("acc-alice/2026-01-01/x.zip", b"PK")
        with stores.archive.local_file("acc-alice/2026-01-01/x.zip") as path:
            assert path.read_bytes() == b"PK" and path.is_relative_to(temp)
        assert sorted(p.name for p in temp.iterdir()) == ["healthlog-body-recent"]


def test_a_folder_is_archived_without_what_leads_out_of_it_or_round_in_a_circle(
    local: Stores, tmp_path: Path
) -> None:
    folder = tmp_path / "apple_health_export"
    folder.mkdir()
    (folder / "export.xml").write_bytes(export_gen.fixture_xml())
    secret = tmp_path / "secret.gpx"
    secret.write_bytes(b"<gpx/>")
    (folder / "workout-routes").mkdir()
    (folder / "workout-routes" / "outside.gpx").symlink_to(secret)
    (folder / "same.xml").symlink_to(folder / "export.xml")
    (folder / "loop").symlink_to(folder, target_is_directory=True)

    report = local.import_(folder)

    stored = tmp_path / "stored.zip"
    stored.write_bytes(local.archive.read(report.archive_key))
    with zipfile.ZipFile(stored) as zipped:
        assert sorted(zipped.namelist()) == [
            "apple_health_export/export.xml",
            "apple_health_export/same.xml",
        ]
    assert report.status is ParseStatus.PARTIAL


# --- a large export.xml is read in a process of its own ---------------------------------


def _aside(stores: Stores) -> Stores:
    """The stores with every export read aside (in production: 16 MB and more)."""
    stores.settings = replace(stores.settings, fold_reader_process_bytes=0)
    return stores


def test_an_import_read_in_a_process_of_its_own_folds_the_same(
    stores: Stores, tmp_path: Path
) -> None:
    path = export_gen.fixture_zip(tmp_path / "export.zip", *export_gen.minutes(export_gen.T0, 60))
    report = _aside(stores).import_(path)
    assert report.status is ParseStatus.PARTIAL and report.uncovered == FIXTURE_UNCOVERED
    assert showcase(stores.journal) == read_directly(path)
    assert sum(n for *_, n in stores.journal.metric_days(account_id=stores.account.id)) == len(
        read_directly(path)[0]
    )


def _readers() -> list[int]:
    """The export readers this process started and that still run (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"healthlog.applehealth.aside" in command:
            found.append(int(entry.name))
    return found


def test_a_reader_process_that_dies_is_a_crash_of_the_fold(local: Stores, tmp_path: Path) -> None:
    """Killed mid-import (as an out-of-memory killer would): the fold defers with its
    attempt still counted, as if it had died itself; the next fold goes on."""
    # steps large enough that the reader is still at work (the pipe full) at the first
    path = export_gen.write_zip(
        tmp_path / "export.zip", export_gen.export_xml(export_gen.minutes(export_gen.T0, 2000))
    )
    _aside(local)
    local.settings = replace(local.settings, fold_step_points=500)
    stored = importer.archive_export(
        importer.inspect(path, max_bytes=local.settings.max_import_bytes),
        local.journal,
        local.archive,
        account_id=local.account.id,
    )
    killed: list[int] = []

    def kill_the_reader(step: importer.ImportProgress) -> None:
        if not killed:
            (reader,) = _readers()
            os.kill(reader, signal.SIGKILL)
            killed.append(reader)

    first = importer.fold_import(
        local.journal, local.archive, local.settings, stored.delivery_id, progress=kill_the_reader
    )
    assert killed and first is not None
    assert (first.klass, first.reason) == (OutcomeClass.DEFERRED, "ReaderDied")
    halfway = local.journal.get_delivery(stored.delivery_id)
    assert halfway is not None and halfway.fold_position > 0
    assert halfway.attempts == 1  # counted: a crash, not a circumstance that passed
    assert _readers() == []  # and nothing is left running

    second = importer.fold_import(local.journal, local.archive, local.settings, stored.delivery_id)
    assert second is not None and second.klass is OutcomeClass.PARSED
    assert showcase(local.journal) == read_directly(path)


def test_a_progress_hook_that_fails_does_not_fail_the_import(local: Stores, tmp_path: Path) -> None:
    path = export_gen.fixture_zip(tmp_path / "export.zip")

    def broken(step: importer.ImportProgress) -> None:
        if step.phase == "fold":
            raise RuntimeError("a progress bar's bug")

    report = local.import_(path, progress=broken)
    assert report.status is ParseStatus.PARTIAL and report.failure is None


def test_the_fold_refuses_an_export_over_the_limit_whatever_put_it_in_the_archive(
    local: Stores, tmp_path: Path
) -> None:
    path = export_gen.fixture_zip(tmp_path / "export.zip", *export_gen.minutes(export_gen.T0, 50))
    report = local.import_(path, fold=False)  # within the limit when it came
    smaller = replace(local.settings, max_import_bytes=10_000)
    outcome = importer.fold_import(local.journal, local.archive, smaller, report.delivery_id)
    assert outcome is not None and (outcome.klass, outcome.reason) == (
        OutcomeClass.FAILED,
        "unreadable",
    )
    assert local.journal.summary().points == 0


def test_the_fold_runs_the_importers_member_checks_whatever_put_it_in_the_archive(
    local: Stores, tmp_path: Path
) -> None:
    # archived without `healthlog import`'s checks (as a body posted through ingest was)
    path = export_gen.fixture_zip(
        tmp_path / "export.zip",
        *export_gen.minutes(export_gen.T0, 5),
        members={"apple_health_export/../../outside/evil.txt": b"x"},
    )
    size = path.stat().st_size
    stored = importer.archive_export(
        importer.Source(path, "zip", size, size),
        local.journal,
        local.archive,
        account_id=local.account.id,
    )
    outcome = importer.fold_import(local.journal, local.archive, local.settings, stored.delivery_id)
    assert outcome is not None and (outcome.klass, outcome.reason) == (
        OutcomeClass.FAILED,
        "unreadable",
    )
    report = importer.report(local.journal, stored, outcome)
    assert report.refused is not None and "path that leaves the export" in report.refused
    assert "evil" not in report.refused
    assert local.journal.summary().points == 0


def test_a_route_and_an_ecg_over_the_caps_keep_the_caps_and_make_the_import_partial(
    local: Stores, tmp_path: Path
) -> None:
    # the caps the fold uses, met by files one element larger (tests/unit/
    # test_expansion_caps.py has the same with small caps, and the readers' counts)
    path = export_gen.write_zip(
        tmp_path / "export.zip",
        export_gen.export_xml([caps.workout(caps.named_route())]),
        routes={caps.GPX_NAME: caps.gpx(CAPS.items + 1)},
        ecgs={"ecg_2024-03-30.csv": caps.ecg_csv(CAPS.ecg + 1)},
    )
    report = local.import_(path)
    assert report.status is ParseStatus.PARTIAL
    assert report.uncovered == {caps.ROUTE_KEY: 1, caps.ECG_KEY: 1}
    delivery = local.journal.get_delivery(report.delivery_id)
    assert delivery is not None and set(delivery.uncovered) == {caps.ROUTE_KEY, caps.ECG_KEY}
    kept = {r.record.section: len(r.record.items) for r in local.journal.export_records()}
    assert kept == {"workouts": CAPS.items, "ecg": CAPS.ecg}
