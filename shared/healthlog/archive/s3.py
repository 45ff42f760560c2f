"""The Archive in S3 (or anything that speaks its API: moto, MinIO).

Writes are conditional creates (``If-None-Match: *``), so a key is never overwritten
and the ingest role needs no DeleteObject permission: a body that is rejected or
aborted was never published. A body that fits one part is sent with one
``PutObject`` at commit; a larger one becomes a multipart upload whose parts are sent
as they fill, so memory stays around one part whatever the body's size, and nothing
is visible until ``CompleteMultipartUpload``.

Every botocore error is translated here: a missing key is ``BodyMissing``, a taken key
``AlreadyExists``, anything else (throttling, 5xx, a refused connection, a missing
bucket, a denied permission) ``ArchiveUnavailable``, which the fold treats as a
circumstance and ingest answers with 503.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from healthlog.archive.keys import check_key
from healthlog.archive.port import put_whole
from healthlog.errors import AlreadyExists, ArchiveUnavailable, BodyMissing

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef

MIB = 1024 * 1024
# S3 needs every part but the last to be at least 5 MiB; 8 MiB keeps the request
# count low for the largest bodies (100 MiB: 13 parts) and memory at about one part
PART_SIZE = 8 * MIB
# what a local copy of a body reads from the stream at a time, and the room it leaves
COPY_CHUNK = 1 * MIB
COPY_ROOM = 64 * MIB
# the temporary folders of local copies; one older than COPY_MAX_AGE_S was left by a
# process killed while it held it (no fold takes that long), and is removed
COPY_PREFIX = "healthlog-body-"
COPY_MAX_AGE_S = 6 * 3600

# Fail in seconds when the store is unreachable: the phone retries a 503, and a fold
# that waits minutes on one body holds up the whole pass.
CLIENT_CONFIG = Config(
    connect_timeout=3,
    read_timeout=30,
    retries={"mode": "standard", "total_max_attempts": 3},
)

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
# 412: the key exists; 409: a concurrent conditional write to the same key is in flight
_TAKEN = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})
_SSE: Final[Literal["AES256"]] = "AES256"


def make_client(
    endpoint_url: str = "", *, session: boto3.session.Session | None = None
) -> S3Client:
    """An S3 client with the adapter's timeouts and retries.

    Credentials and region come from ``session``, by default boto3's usual chain (the
    Lambda role, the environment, ``~/.aws``); the region defaults to us-east-1.
    """
    session = session or boto3.session.Session()
    config = CLIENT_CONFIG
    if endpoint_url:
        # S3-compatible servers (MinIO, moto) are addressed by path, not by bucket host
        config = config.merge(Config(s3={"addressing_style": "path"}))
    return session.client(
        "s3",
        region_name=session.region_name or "us-east-1",
        endpoint_url=endpoint_url or None,
        config=config,
    )


class S3Archive:
    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        client: S3Client | None = None,
        endpoint_url: str = "",
    ) -> None:
        self.bucket = bucket
        prefix = prefix.strip("/")
        self.prefix = prefix + "/" if prefix else ""
        self._owns_client = client is None
        self.client = client if client is not None else make_client(endpoint_url)

    def writer(self, key: str) -> S3Writer:
        """Start writing a body under ``key``; no request is sent until a part fills."""
        return S3Writer(self, self._object_key(key))

    def put(self, key: str, body: bytes) -> int:
        return put_whole(self, key, body)

    def read(self, key: str) -> bytes:
        name = self._object_key(key)
        with _translated("read", missing=True):
            response = self.client.get_object(Bucket=self.bucket, Key=name)
            # inside the block: a connection dropped mid-body is a botocore error too
            return response["Body"].read()

    @contextmanager
    def local_file(self, key: str) -> Iterator[Path]:
        """The object streamed into a private temporary file, removed after the block."""
        name = self._object_key(key)
        size = self.size(key)
        _sweep_copies(Path(tempfile.gettempdir()))
        with tempfile.TemporaryDirectory(prefix=COPY_PREFIX) as folder:  # 0700
            if shutil.disk_usage(folder).free < size + COPY_ROOM:
                # (a Lambda's /tmp is 512 MB unless configured): not fetched at all
                raise ArchiveUnavailable(f"no room here for a local copy of {size} bytes")
            path = Path(folder) / "body"
            try:
                with _translated("read", missing=True), path.open("wb") as out:
                    response = self.client.get_object(Bucket=self.bucket, Key=name)
                    for chunk in response["Body"].iter_chunks(COPY_CHUNK):
                        out.write(chunk)
            except OSError as e:  # this machine's disk, not the body: try again later
                raise ArchiveUnavailable(f"no local copy of the body: {e.strerror}") from e
            yield path

    def size(self, key: str) -> int:
        name = self._object_key(key)
        with _translated("head", missing=True):
            return self.client.head_object(Bucket=self.bucket, Key=name)["ContentLength"]

    def keys(self, prefix: str = "") -> Iterator[str]:
        strip = len(self.prefix)
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix + prefix
        )
        with _translated("list"):
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"][strip:]

    def sweep(self, older_than_s: float) -> int:
        """Abort the multipart uploads under the prefix begun ``older_than_s`` ago or more.

        (The bucket's lifecycle rule does the same after days; this is for now.)
        """
        cutoff = datetime.now(UTC) - timedelta(seconds=older_than_s)
        removed = 0
        pages = self.client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        with _translated("sweep"):
            for page in pages:
                for upload in page.get("Uploads", []):
                    if upload["Initiated"] <= cutoff:
                        self.client.abort_multipart_upload(
                            Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                        )
                        removed += 1
        return removed

    def delete(self, key: str) -> None:
        """DeleteObject: S3 answers 204 whether or not the key was there.

        Only the operator's retention run calls it; the functions' roles have no right
        to (template.yaml), so in the cloud retention is the operator's or a lifecycle
        rule's (docs/deploy.md, "Retention").
        """
        name = self._object_key(key)
        with _translated("delete"):
            self.client.delete_object(Bucket=self.bucket, Key=name)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    def _object_key(self, key: str) -> str:
        return self.prefix + check_key(key)


class S3Writer:
    def __init__(self, archive: S3Archive, name: str) -> None:
        self._client = archive.client
        self._bucket = archive.bucket
        self._name = name
        self._buffer = bytearray()
        self._size = 0
        self._upload_id: str | None = None
        self._parts: list[CompletedPartTypeDef] = []
        self._closed = False

    def write(self, chunk: bytes) -> None:
        self._check_open()
        self._buffer += chunk
        self._size += len(chunk)
        try:
            # strictly more than a part: a body of exactly one part stays a single PUT,
            # and the part left for commit is never empty
            while len(self._buffer) > PART_SIZE:
                if self._upload_id is None:
                    self._start_multipart()
                self._upload_part(PART_SIZE)
        except ArchiveUnavailable:
            self.abort()
            raise

    def commit(self) -> int:
        self._check_open()
        try:
            if self._upload_id is None:
                self._put_whole()
            else:
                self._upload_part(len(self._buffer))
                self._complete_multipart()
        finally:
            # after a failure, this aborts the multipart upload still open, so no
            # parts linger (and cost) in the bucket; after success it only lets go
            self.abort()
        return self._size

    def abort(self) -> None:
        self._closed = True
        self._buffer = bytearray()
        upload_id, self._upload_id = self._upload_id, None
        if upload_id is not None:
            # best effort: a bucket lifecycle rule (AbortIncompleteMultipartUpload)
            # sweeps whatever this cannot reach
            with suppress(BotoCoreError, ClientError):
                self._client.abort_multipart_upload(
                    Bucket=self._bucket, Key=self._name, UploadId=upload_id
                )

    # --- requests -----------------------------------------------------------------------

    def _put_whole(self) -> None:
        body, self._buffer = bytes(self._buffer), bytearray()
        try:
            with _translated("put", taken=True):
                self._client.put_object(
                    Bucket=self._bucket,
                    Key=self._name,
                    Body=body,
                    IfNoneMatch="*",
                    ServerSideEncryption=_SSE,
                )
        except AlreadyExists as e:
            if not _retried(e) or not self._holds(_md5(body)):
                raise

    def _start_multipart(self) -> None:
        with _translated("create multipart"):
            response = self._client.create_multipart_upload(
                Bucket=self._bucket, Key=self._name, ServerSideEncryption=_SSE
            )
        self._upload_id = response["UploadId"]

    def _upload_part(self, length: int) -> None:
        assert self._upload_id is not None
        number = len(self._parts) + 1
        with memoryview(self._buffer) as view:
            part = view[:length].tobytes()  # one copy; the buffer is resized below
        with _translated("upload part"):
            response = self._client.upload_part(
                Bucket=self._bucket,
                Key=self._name,
                UploadId=self._upload_id,
                PartNumber=number,
                Body=part,
            )
        del self._buffer[:length]
        self._parts.append({"PartNumber": number, "ETag": response["ETag"]})

    def _complete_multipart(self) -> None:
        assert self._upload_id is not None
        try:
            with _translated("complete multipart", taken=True):
                self._client.complete_multipart_upload(
                    Bucket=self._bucket,
                    Key=self._name,
                    UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts},
                    IfNoneMatch="*",
                )
        except AlreadyExists as e:
            if not _retried(e) or not self._holds(_multipart_etag(self._parts)):
                raise
        self._upload_id = None  # completed: nothing left to abort

    def _holds(self, etag: str) -> bool:
        """Whether the object under our key is the body this writer sent.

        A conditional write whose reply was lost (a read timeout) is retried by
        botocore and then fails its own precondition: the object it "collides" with
        is its own. With SSE-S3, an object's ETag is the MD5 of its bytes (or, for a
        multipart upload, of its parts' MD5s), so comparing ETags tells the two apart.
        If the store cannot say, ArchiveUnavailable: the caller answers 503 and the
        phone sends the body again, rather than being told of a collision.
        """
        with _translated("head"):
            head = self._client.head_object(Bucket=self._bucket, Key=self._name)
        return head.get("ETag", "").strip('"') == etag and head["ContentLength"] == self._size

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this archive writer was already committed or aborted")


def _sweep_copies(folder: Path) -> None:
    """Remove the local copies killed processes left (a copy can be gigabytes)."""
    cutoff = time.time() - COPY_MAX_AGE_S
    with suppress(OSError):
        for entry in folder.iterdir():
            with suppress(OSError):
                if entry.name.startswith(COPY_PREFIX) and entry.stat().st_mtime < cutoff:
                    shutil.rmtree(entry)


@contextmanager
def _translated(action: str, *, missing: bool = False, taken: bool = False) -> Iterator[None]:
    """Translate botocore's errors into the port's; nothing from botocore escapes."""
    try:
        yield
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", ""))
        if missing and code in _MISSING:
            raise BodyMissing() from e
        if taken and code in _TAKEN:
            raise AlreadyExists() from e
        raise ArchiveUnavailable(f"S3 {action} failed: {code or 'error'}") from e
    except BotoCoreError as e:
        raise ArchiveUnavailable(f"S3 {action} failed: {type(e).__name__}") from e


def _retried(e: AlreadyExists) -> bool:
    cause = e.__cause__
    if not isinstance(cause, ClientError):
        return False
    return int(cause.response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0


def _md5(data: bytes | bytearray) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _multipart_etag(parts: list[CompletedPartTypeDef]) -> str:
    digests = b"".join(bytes.fromhex(p["ETag"].strip('"')) for p in parts)
    return f"{_md5(digests)}-{len(parts)}"
