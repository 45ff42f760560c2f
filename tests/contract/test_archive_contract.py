"""The Archive contract, run against every adapter and fake of the port.

``local`` is a folder under tmp_path, ``memory`` the shipped fake, ``faulty`` the fault
wrapper with every fault switched off (it must be invisible), and ``s3`` the real S3
adapter talking HTTP to moto's server with a fresh bucket per test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.archive.s3 import PART_SIZE, S3Archive
from healthlog.errors import AlreadyExists, ArchiveUnavailable, BodyMissing
from healthlog.testing import FaultyArchive, MemoryArchive

from tests import s3

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

KIB = 1024
MIB = 1024 * KIB
CHUNK = 64 * KIB
KEY = "acc-1/2024-05-01/0190a0b0-0000-7000-8000-000000000001.json"


@pytest.fixture(scope="session")
def s3_client() -> Iterator[S3Client]:
    with s3.moto_server() as endpoint:
        client = s3.client_for(endpoint)
        yield client
        client.close()


@pytest.fixture(params=["local", "memory", "faulty", "s3"])
def archive(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Archive]:
    adapter: Archive
    if request.param == "local":
        adapter = LocalArchive(tmp_path / "archive")
    elif request.param == "memory":
        adapter = MemoryArchive()
    elif request.param == "faulty":
        adapter = FaultyArchive(MemoryArchive())
    else:
        # requested here, not as an argument, so local and memory never start moto
        client: S3Client = request.getfixturevalue("s3_client")
        bucket = f"contract-{uuid.uuid4().hex[:16]}"
        client.create_bucket(Bucket=bucket)
        adapter = S3Archive(bucket, "bodies", client=client)
    yield adapter
    adapter.close()


@pytest.fixture(scope="module")
def big_body() -> bytes:
    """Over two S3 parts, not a multiple of the chunk or the part size, and random, so
    a part sent twice, dropped or out of order cannot go unnoticed."""
    return os.urandom(2 * PART_SIZE + 123_457)


def stream(archive: Archive, key: str, body: bytes) -> int:
    w = archive.writer(key)
    for i in range(0, len(body), CHUNK):
        w.write(body[i : i + CHUNK])
    return w.commit()


def test_a_body_put_reads_back_byte_for_byte(archive: Archive) -> None:
    body = b'{"data": {"metrics": []}}\n\x00\xff'
    assert archive.put(KEY, body) == len(body)
    assert archive.read(KEY) == body


def test_a_body_streamed_in_chunks_reads_back_byte_for_byte(
    archive: Archive, big_body: bytes
) -> None:
    assert stream(archive, KEY, big_body) == len(big_body)
    assert archive.size(KEY) == len(big_body)
    assert archive.read(KEY) == big_body


def test_a_body_of_exactly_one_part_reads_back(archive: Archive) -> None:
    body = os.urandom(PART_SIZE)
    assert stream(archive, KEY, body) == PART_SIZE
    assert archive.read(KEY) == body


def test_nothing_is_visible_before_commit(archive: Archive, big_body: bytes) -> None:
    w = archive.writer(KEY)
    for i in range(0, len(big_body), CHUNK):
        w.write(big_body[i : i + CHUNK])
    assert list(archive.keys()) == []
    with pytest.raises(BodyMissing):
        archive.read(KEY)
    with pytest.raises(BodyMissing):
        archive.size(KEY)
    w.commit()
    assert list(archive.keys()) == [KEY]


@pytest.mark.parametrize("length", [10, 2 * PART_SIZE + 1], ids=["small", "multipart"])
def test_an_aborted_body_leaves_nothing(archive: Archive, length: int) -> None:
    w = archive.writer(KEY)
    w.write(os.urandom(length))
    w.abort()
    w.abort()  # twice is harmless
    assert list(archive.keys()) == []
    with pytest.raises(BodyMissing):
        archive.read(KEY)


@pytest.mark.parametrize("length", [10, 2 * PART_SIZE + 1], ids=["small", "multipart"])
def test_a_taken_key_raises_already_exists_and_keeps_the_original(
    archive: Archive, length: int
) -> None:
    archive.put(KEY, b"the original")
    w = archive.writer(KEY)
    w.write(os.urandom(length))
    with pytest.raises(AlreadyExists):
        w.commit()
    w.abort()  # after a failed commit, abort is a harmless no-op
    assert archive.read(KEY) == b"the original"
    assert list(archive.keys()) == [KEY]


def test_the_same_bytes_again_still_raise_already_exists(archive: Archive) -> None:
    archive.put(KEY, b"same")
    with pytest.raises(AlreadyExists):
        archive.put(KEY, b"same")


def test_of_two_writers_of_one_key_only_the_first_commit_wins(archive: Archive) -> None:
    first, second = archive.writer(KEY), archive.writer(KEY)
    first.write(b"first")
    second.write(b"second")
    assert first.commit() == 5
    with pytest.raises(AlreadyExists):
        second.commit()
    assert archive.read(KEY) == b"first"


def test_a_missing_key_raises_body_missing(archive: Archive) -> None:
    archive.put("acc-1/other.json", b"{}")
    with pytest.raises(BodyMissing):
        archive.read(KEY)
    with pytest.raises(BodyMissing):
        archive.size(KEY)


def test_a_prefix_of_keys_is_not_a_body(archive: Archive) -> None:
    archive.put(KEY, b"{}")
    with pytest.raises(BodyMissing):
        archive.read("acc-1/2024-05-01")
    with pytest.raises(BodyMissing):
        archive.size("acc-1")


def test_size_is_the_committed_length(archive: Archive) -> None:
    archive.put("a/one.json", b"12345")
    archive.put("a/two.json", b"")
    assert archive.size("a/one.json") == 5
    assert archive.size("a/two.json") == 0


def test_an_empty_body_is_a_body(archive: Archive) -> None:
    w = archive.writer(KEY)
    assert w.commit() == 0
    assert archive.read(KEY) == b""
    assert archive.size(KEY) == 0
    assert list(archive.keys()) == [KEY]


# Byte order of whole keys, as S3 lists them: "-" (0x2d) < "/" (0x2f) < "0" < "a", so
# "a-c" comes before everything under "a/", and "a/b" before "a0".
KEYS_IN_ORDER = ["a-c", "a/a/x.json", "a/b", "a/b0/y.json", "a0", "ab/c", "b"]


def test_keys_come_in_byte_order_of_the_whole_key(archive: Archive) -> None:
    for key in reversed(KEYS_IN_ORDER):
        archive.put(key, key.encode())
    assert list(archive.keys()) == KEYS_IN_ORDER


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("", KEYS_IN_ORDER),
        ("a", ["a-c", "a/a/x.json", "a/b", "a/b0/y.json", "a0", "ab/c"]),
        ("a/", ["a/a/x.json", "a/b", "a/b0/y.json"]),
        ("a/b", ["a/b", "a/b0/y.json"]),
        ("a/b0/", ["a/b0/y.json"]),
        ("a/b0/y.json", ["a/b0/y.json"]),
        ("c", []),
        ("a/b0/y.jsonx", []),
    ],
)
def test_keys_filter_by_string_prefix(archive: Archive, prefix: str, expected: list[str]) -> None:
    for key in KEYS_IN_ORDER:
        archive.put(key, b"x")
    assert list(archive.keys(prefix)) == expected


@pytest.mark.parametrize("key", ["", "/abs/x.json", "a//b", "a/", "../x", "a/../b", "a/./b"])
def test_an_invalid_key_is_rejected(archive: Archive, key: str) -> None:
    with pytest.raises(ValueError, match="invalid archive key"):
        archive.put(key, b"x")
    with pytest.raises(ValueError, match="invalid archive key"):
        archive.read(key)


def test_a_writer_is_finished_by_commit(archive: Archive) -> None:
    w = archive.writer(KEY)
    w.write(b"x")
    w.commit()
    with pytest.raises(RuntimeError):
        w.write(b"more")
    with pytest.raises(RuntimeError):
        w.commit()


# --- the fault wrapper does what it is told, and nothing else ---------------------------


def test_a_sweep_removes_what_a_killed_writer_left_and_never_a_body(
    archive: Archive, big_body: bytes
) -> None:
    """A writer that neither commits nor aborts (its process was killed) leaves bytes
    behind on a real store; a sweep of that age removes them, and no committed body."""
    archive.put("acct/2026-01-01/kept.json", b"{}")
    abandoned = archive.writer("acct/2026-01-01/killed.json")
    for i in range(0, len(big_body), CHUNK):  # past a part: S3 has an upload open
        abandoned.write(big_body[i : i + CHUNK])

    if not isinstance(archive, S3Archive):
        # too young: its writer may be alive. (moto reports every upload as begun in
        # 2010, so S3's age filter is tested on its own in test_s3_sweep.py)
        assert archive.sweep(older_than_s=3600) == 0
    removed = archive.sweep(older_than_s=0)

    assert removed == (0 if isinstance(archive, MemoryArchive | FaultyArchive) else 1)
    assert archive.sweep(older_than_s=0) == 0
    assert list(archive.keys()) == ["acct/2026-01-01/kept.json"]
    assert archive.read("acct/2026-01-01/kept.json") == b"{}"


def test_a_failing_write_raises_archive_unavailable_and_publishes_nothing() -> None:
    archive = FaultyArchive(MemoryArchive(), fail_write=True)
    w = archive.writer(KEY)
    with pytest.raises(ArchiveUnavailable):
        w.write(b"x")
    w.abort()
    assert list(archive.inner.keys()) == []


def test_a_failing_commit_raises_archive_unavailable_and_publishes_nothing() -> None:
    archive = FaultyArchive(MemoryArchive(), fail_commit=True)
    with pytest.raises(ArchiveUnavailable):
        archive.put(KEY, b"x")
    assert list(archive.inner.keys()) == []
    archive.fail_commit = False
    assert archive.put(KEY, b"x") == 1  # the faults can be switched off between steps


def test_a_failing_read_covers_read_size_and_keys() -> None:
    inner = MemoryArchive()
    inner.put(KEY, b"x")
    archive = FaultyArchive(inner, fail_read=True)
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)
    with pytest.raises(ArchiveUnavailable):
        archive.size(KEY)
    with pytest.raises(ArchiveUnavailable):
        list(archive.keys())


def test_a_read_fault_can_target_one_body() -> None:
    inner = MemoryArchive()
    inner.put(KEY, b"stuck")
    inner.put("acc-1/2024-05-01/other.json", b"fine")
    archive = FaultyArchive(inner, fail_read_for={"0190a0b0-0000-7000-8000-000000000001"})
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)
    assert archive.read("acc-1/2024-05-01/other.json") == b"fine"
    assert list(archive.keys()) == [KEY, "acc-1/2024-05-01/other.json"]


def test_a_misspelt_fault_switch_is_an_error() -> None:
    archive = FaultyArchive(MemoryArchive())
    with pytest.raises(AttributeError):
        archive.fail_reads = True  # type: ignore[attr-defined]


def test_a_slow_archive_stalls_every_operation_and_counts_calls() -> None:
    stalls: list[float] = []
    archive = FaultyArchive(MemoryArchive(), delay_s=2.5, sleep=stalls.append)
    archive.put(KEY, b"x")
    archive.read(KEY)
    assert stalls == [2.5] * 4  # writer, write, commit, read
    assert archive.calls["read"] == 1
    assert archive.calls["commit"] == 1


def test_a_local_file_holds_the_body_byte_for_byte(archive: Archive, big_body: bytes) -> None:
    stream(archive, KEY, big_body)
    with archive.local_file(KEY) as path:
        assert path.read_bytes() == big_body
        assert path.stat().st_size == len(big_body)
    assert archive.read(KEY) == big_body  # the archive's copy is untouched
    with pytest.raises(BodyMissing), archive.local_file(KEY.replace("0001", "0002")):
        pass


def test_a_local_copy_is_private_and_removed_after_the_block(archive: Archive) -> None:
    """What a copy holds is health data: a folder of the owner's only, gone afterwards.

    The local folder's file is the body itself, in the archive: it stays.
    """
    archive.put(KEY, b"{}")
    with archive.local_file(KEY) as path:
        own = isinstance(archive, LocalArchive)
        if isinstance(archive, LocalArchive):
            assert path.is_relative_to(archive.root)
        assert path.parent.stat().st_mode & 0o077 == 0
    assert path.exists() is own and path.parent.exists() is own


def test_a_failing_read_covers_the_local_file() -> None:
    inner = MemoryArchive()
    inner.put(KEY, b"{}")
    faulty = FaultyArchive(inner, fail_read_for=["0001"])
    with pytest.raises(ArchiveUnavailable), faulty.local_file(KEY):
        pass
    assert faulty.calls["local_file"] == 1


def test_a_deleted_body_is_gone_from_read_size_and_keys_and_others_stay(
    archive: Archive,
) -> None:
    other = KEY.replace("0001.json", "0002.json")
    archive.put(KEY, b"gone")
    archive.put(other, b"kept")
    archive.delete(KEY)
    with pytest.raises(BodyMissing):
        archive.read(KEY)
    with pytest.raises(BodyMissing):
        archive.size(KEY)
    assert list(archive.keys()) == [other]
    assert archive.read(other) == b"kept"


def test_deleting_a_missing_key_is_no_error_so_a_second_run_finishes(archive: Archive) -> None:
    archive.put(KEY, b"once")
    archive.delete(KEY)
    archive.delete(KEY)  # the run after a crash deletes again: nothing to do, no error
    archive.delete(KEY.replace("0001.json", "0009.json"))  # never written at all
    assert list(archive.keys()) == []
