"""What only the local folder adapter does: temp files, fsync, OS errors, memory.

The shared behaviour is in ``tests/contract/test_archive_contract.py``. Where a test
replaces ``os.fsync`` or ``os.link`` it patches the operating system, not our code.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from healthlog.archive.local import MARKER, LocalArchive
from healthlog.errors import AlreadyExists, ArchiveUnavailable, BodyMissing

MIB = 1024 * 1024
KEY = "acc-1/2024-05-01/0190a0b0-0000-7000-8000-000000000001.json"


def temp_files(root: Path) -> list[str]:
    return sorted(os.listdir(root / ".tmp"))


def marked(root: Path) -> LocalArchive:
    """An archive on a folder that exists already (pytest's): marked as one, by hand."""
    (root / MARKER).touch(exist_ok=True)
    return LocalArchive(root)


def test_a_body_left_by_a_crash_is_never_listed(tmp_path: Path) -> None:
    crashed = marked(tmp_path)
    w = crashed.writer(KEY)
    w.write(b'{"data": ')  # the process dies here: no commit, no abort
    restarted = marked(tmp_path)
    assert list(restarted.keys()) == []
    assert len(temp_files(tmp_path)) == 1  # it is there, but only as a temp file
    restarted.put(KEY, b"{}")
    assert list(restarted.keys()) == [KEY]


def test_commit_abort_and_a_taken_key_leave_no_temp_file(tmp_path: Path) -> None:
    archive = marked(tmp_path)
    archive.put(KEY, b"{}")
    w = archive.writer("acc-1/aborted.json")
    w.write(b"x")
    w.abort()
    with pytest.raises(AlreadyExists):
        archive.put(KEY, b"again")
    assert temp_files(tmp_path) == []


def test_a_key_under_the_temp_folder_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.tmp"):
        marked(tmp_path).put(".tmp/x.json", b"{}")


def test_a_root_that_is_a_file_makes_the_archive_unavailable(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    root.write_bytes(b"not a folder")
    archive = LocalArchive(root)
    with pytest.raises(ArchiveUnavailable) as raised:
        archive.put(KEY, b"{}")
    assert isinstance(raised.value.__cause__, OSError)
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)
    with pytest.raises(ArchiveUnavailable):
        archive.size(KEY)
    with pytest.raises(ArchiveUnavailable):
        list(archive.keys())


def test_a_missing_root_is_unavailable_not_a_missing_body(tmp_path: Path) -> None:
    """An unmounted volume must leave deliveries pending, not fail them."""
    archive = LocalArchive(tmp_path / "not-mounted")
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)
    assert list(archive.keys()) == []  # a fresh install has simply written nothing yet


def test_the_root_is_created_on_first_write(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "new" / "archive")
    archive.put(KEY, b"{}")
    assert archive.read(KEY) == b"{}"


def first_writes_at_once(archive: LocalArchive, writers: int) -> list[Exception]:
    """``writers`` threads each put one body into ``archive`` at the same moment."""
    start = threading.Barrier(writers)
    failures: list[Exception] = []

    def first_write(n: int) -> None:
        start.wait()
        try:
            archive.put(KEY.replace("0001.json", f"{n:04d}.json"), b"{}")
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=first_write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def test_concurrent_first_writes_into_a_new_root_all_commit(tmp_path: Path) -> None:
    """A fresh install's first deliveries arrive at once: none may see a root unmarked.

    A root made and marked in two steps looked, between them, like an unmounted
    volume's empty mount point to the other writers, which refused their bodies (the
    ingest benchmark's first requests got 503).
    """
    writers = 16
    for trial in range(20):
        archive = LocalArchive(tmp_path / f"trial-{trial}" / "archive")
        failures = first_writes_at_once(archive, writers)
        assert failures == [], f"trial {trial}: {failures[0]!r}"
        assert len(list(archive.keys())) == writers
        # the losers of the race to make the root left no staging folder behind
        assert os.listdir(archive.root.parent) == ["archive"]
        assert stat.S_IMODE(archive.root.stat().st_mode) == 0o700


def test_a_staging_folder_a_crash_left_beside_the_root_is_swept(tmp_path: Path) -> None:
    archive = LocalArchive(tmp_path / "archive")
    archive.put(KEY, b"{}")
    left = tmp_path / f"{MARKER}-new-crashed"  # a writer killed while making the root
    left.mkdir()
    (left / MARKER).write_bytes(b"x")
    fresh = tmp_path / f"{MARKER}-new-running"  # one being made right now
    fresh.mkdir()
    old = time.time() - 7 * 3600
    os.utime(left, (old, old))
    assert archive.sweep(older_than_s=6 * 3600) == 1
    assert sorted(os.listdir(tmp_path)) == sorted(["archive", fresh.name])
    assert archive.read(KEY) == b"{}"


def test_bodies_and_folders_are_private_to_the_service(tmp_path: Path) -> None:
    marked(tmp_path).put(KEY, b"{}")
    assert stat.S_IMODE((tmp_path / KEY).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "acc-1").stat().st_mode) & 0o077 == 0


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Record the (device, inode) of everything fsynced, then fsync it for real."""
    synced: list[tuple[int, int]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced.append((st.st_dev, st.st_ino))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def ident(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_dev, st.st_ino)


def test_commit_fsyncs_the_body_and_every_folder_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = marked(tmp_path)
    synced = record_fsyncs(monkeypatch)
    archive.put("acc-1/2024-05-01/a.json", b"{}")
    # the body (the temp file's inode is the published file's: a hard link), then the
    # root (gained acc-1), acc-1 (gained the day) and the day (gained the body)
    day = tmp_path / "acc-1" / "2024-05-01"
    assert synced == [
        ident(day / "a.json"),
        ident(tmp_path),
        ident(tmp_path / "acc-1"),
        ident(day),
    ]
    synced.clear()
    archive.put("acc-1/2024-05-01/b.json", b"{}")
    assert synced == [ident(day / "b.json"), ident(day)]


def test_a_failed_folder_fsync_takes_the_body_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = marked(tmp_path)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "I/O error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(ArchiveUnavailable):
        archive.put(KEY, b"{}")
    monkeypatch.undo()
    assert list(archive.keys()) == []  # "not committed" stays true: ingest answers 503
    assert temp_files(tmp_path) == []


def test_a_filesystem_without_hard_links_makes_the_archive_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    archive = marked(tmp_path)
    with pytest.raises(ArchiveUnavailable):
        archive.put(KEY, b"{}")
    monkeypatch.undo()
    assert list(archive.keys()) == []
    assert temp_files(tmp_path) == []


def test_a_full_disk_during_write_makes_the_archive_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = marked(tmp_path)
    w = archive.writer(KEY)
    w.write(b"x")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ArchiveUnavailable):
        w.commit()
    monkeypatch.undo()
    assert list(archive.keys()) == []
    assert temp_files(tmp_path) == []


def test_streaming_a_large_body_keeps_memory_flat(tmp_path: Path) -> None:
    archive = marked(tmp_path)
    chunk = os.urandom(64 * 1024)
    total = 50 * MIB
    tracemalloc.start()
    try:
        w = archive.writer(KEY)
        for _ in range(total // len(chunk)):
            w.write(chunk)
        assert w.commit() == total
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 * MIB, f"peak {peak} bytes while streaming {total}"
    assert archive.size(KEY) == total


def test_a_new_root_is_marked_and_an_unmarked_empty_one_is_unavailable(tmp_path: Path) -> None:
    """An unmounted volume leaves its bare mount point: empty, without the marker."""
    mount = tmp_path / "volume"
    archive = LocalArchive(mount)
    archive.put(KEY, b"{}")  # the first write creates the root, and marks it
    assert (mount / MARKER).is_file()
    assert stat.S_IMODE((mount / MARKER).stat().st_mode) == 0o600
    other = KEY.replace("0001.json", "0002.json")

    (mount).rename(tmp_path / "away")  # umount: the mount point is an empty folder again
    mount.mkdir()
    with pytest.raises(ArchiveUnavailable, match="is its volume mounted"):
        archive.put(other, b"{}")  # nothing written into the bare mount point
    assert os.listdir(mount) == []
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)  # unavailable, not a missing body
    with pytest.raises(ArchiveUnavailable):
        archive.size(KEY)
    with pytest.raises(ArchiveUnavailable):
        list(archive.keys())
    with pytest.raises(ArchiveUnavailable):
        archive.delete(KEY)  # retention must not count a hidden body as deleted

    mount.rmdir()
    (tmp_path / "away").rename(mount)  # mounted again: all there
    assert archive.read(KEY) == b"{}"
    archive.put(other, b"{}")
    assert list(archive.keys()) == [KEY, other]


def test_an_archive_from_before_the_marker_is_adopted(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    (root / "acc-1" / "2024-05-01").mkdir(parents=True)
    (root / KEY).write_bytes(b"{}")
    archive = LocalArchive(root)
    assert list(archive.keys()) == [KEY]
    assert (root / MARKER).is_file()
    with pytest.raises(BodyMissing):
        archive.read(KEY.replace("0001.json", "0003.json"))
