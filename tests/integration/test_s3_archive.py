"""What only the S3 adapter does, against moto's S3 server over HTTP.

The shared behaviour is in ``tests/contract/test_archive_contract.py``. Faults S3 can
produce but moto does not (throttling, a lost reply) are injected at botocore's
``before-send`` hook, so the adapter's client, retries and error parsing all run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from botocore.httpsession import URLLib3Session
from healthlog.archive.s3 import PART_SIZE, S3Archive
from healthlog.config import Settings
from healthlog.errors import AlreadyExists, ArchiveUnavailable
from healthlog.local.launcher import free_port
from healthlog.ops import wiring

from tests import s3

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: the checkout, where ``tests`` is a package a fresh interpreter imports
ROOT = Path(__file__).resolve().parents[2]
KEY = "acc-1/2024-05-01/0190a0b0-0000-7000-8000-000000000001.json"
MULTIPART = 2 * PART_SIZE + 123_457  # three parts


def stream(archive: S3Archive, key: str, body: bytes) -> int:
    w = archive.writer(key)
    for i in range(0, len(body), 64 * 1024):
        w.write(body[i : i + 64 * 1024])
    return w.commit()


def open_uploads(client: S3Client, bucket: str) -> list[Any]:
    return list(client.list_multipart_uploads(Bucket=bucket).get("Uploads", []))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: object) -> Iterator[bytes]:
        yield self._body


def reply(status: int, body: bytes = b"", **headers: str) -> AWSResponse:
    """A reply as S3 would send it, for a ``before-send`` hook to return."""
    return AWSResponse("http://injected", status, cast(Any, headers), _Raw(body))


def s3_error(status: int, code: str) -> AWSResponse:
    xml = f"<Error><Code>{code}</Code><Message>injected</Message></Error>"
    return reply(status, xml.encode())


Hook = Callable[..., AWSResponse | None]


@contextmanager
def hooked(client: S3Client, event: str, hook: Hook) -> Iterator[None]:
    """``hook`` sees every request of ``event`` before it is sent; a reply it returns
    is taken as the server's, an exception it raises as the transport's."""
    # the stubs type handlers as returning None; before-send handlers may return a reply
    handler = cast(Callable[..., None], hook)
    client.meta.events.register(event, handler)
    try:
        yield
    finally:
        client.meta.events.unregister(event, handler)


# --- where and how objects are stored ---------------------------------------------------


def test_the_prefix_is_applied_and_stripped(s3_client: S3Client, s3_bucket: str) -> None:
    archive = S3Archive(s3_bucket, "/tenant/bodies/", client=s3_client)
    archive.put(KEY, b"{}")
    s3_client.put_object(Bucket=s3_bucket, Key="elsewhere/x.json", Body=b"{}")
    stored = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]]
    assert stored == ["elsewhere/x.json", f"tenant/bodies/{KEY}"]
    assert list(archive.keys()) == [KEY]
    assert list(archive.keys("acc-1/")) == [KEY]


@pytest.mark.parametrize("length", [10, MULTIPART], ids=["single", "multipart"])
def test_bodies_are_stored_with_server_side_encryption(
    s3_client: S3Client, s3_bucket: str, length: int
) -> None:
    stream(S3Archive(s3_bucket, client=s3_client), KEY, os.urandom(length))
    head = s3_client.head_object(Bucket=s3_bucket, Key=KEY)
    assert head["ServerSideEncryption"] == "AES256"


def test_a_body_over_one_part_is_uploaded_in_parts(s3_client: S3Client, s3_bucket: str) -> None:
    stream(S3Archive(s3_bucket, client=s3_client), KEY, os.urandom(MULTIPART))
    assert s3_client.head_object(Bucket=s3_bucket, Key=KEY)["ETag"].endswith('-3"')


def test_an_aborted_multipart_body_leaves_no_object_and_no_open_upload(
    s3_client: S3Client, s3_bucket: str
) -> None:
    w = S3Archive(s3_bucket, client=s3_client).writer(KEY)
    w.write(os.urandom(PART_SIZE + 1))  # one part is already in the bucket
    assert len(open_uploads(s3_client, s3_bucket)) == 1
    w.abort()
    assert open_uploads(s3_client, s3_bucket) == []
    assert "Contents" not in s3_client.list_objects_v2(Bucket=s3_bucket)


def test_a_multipart_body_on_a_taken_key_leaves_no_open_upload(
    s3_client: S3Client, s3_bucket: str
) -> None:
    archive = S3Archive(s3_bucket, client=s3_client)
    archive.put(KEY, b"the original")
    with pytest.raises(AlreadyExists):
        stream(archive, KEY, os.urandom(MULTIPART))
    assert open_uploads(s3_client, s3_bucket) == []
    assert archive.read(KEY) == b"the original"


def test_a_failed_part_aborts_the_upload(s3_client: S3Client, s3_bucket: str) -> None:
    archive = S3Archive(s3_bucket, client=s3_client)
    w = archive.writer(KEY)
    with (
        hooked(s3_client, "before-send.s3.UploadPart", lambda **_: s3_error(403, "AccessDenied")),
        pytest.raises(ArchiveUnavailable),
    ):
        w.write(os.urandom(PART_SIZE + 1))
    assert open_uploads(s3_client, s3_bucket) == []
    assert list(archive.keys()) == []


def stream_peak() -> int:
    """The peak of Python's allocations while 100 MiB (the default body limit) stream
    through the writer, with S3 answered at the client's ``before-send`` hook so that no
    server in this process keeps the parts."""

    def accept(request: AWSPreparedRequest, **_: object) -> AWSResponse:
        if request.method == "PUT":  # UploadPart
            return reply(200, ETag='"' + "0" * 32 + '"')
        if "uploadId" not in request.url:  # CreateMultipartUpload
            return reply(200, b"<Result><UploadId>u-1</UploadId></Result>")
        return reply(200, b"<Result><ETag>x</ETag></Result>")  # CompleteMultipartUpload

    client = s3.client_for("http://127.0.0.1:9")  # never contacted: the hook answers
    archive = S3Archive("not-contacted", client=client)
    chunk = os.urandom(64 * 1024)
    total = 100 * 1024 * 1024
    with hooked(client, "before-send.s3", accept):
        tracemalloc.start()
        try:
            w = archive.writer(KEY)
            for _ in range(total // len(chunk)):
                w.write(chunk)
            assert w.commit() == total
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    client.close()
    return peak


def test_streaming_a_large_body_keeps_memory_to_a_few_parts() -> None:
    """Measured in a fresh interpreter: tracemalloc counts every thread of its process,
    and a test run's process holds threads other tests started (one of them once
    allocated a part's worth while this one streamed, under load)."""
    measured = subprocess.run(
        [sys.executable, "-c", f"from {__name__} import stream_peak; print(stream_peak())"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    peak = int(measured.stdout.split()[-1])
    assert peak < 3 * PART_SIZE, f"peak {peak} bytes while streaming 100 MiB"


# --- errors --------------------------------------------------------------------------------


@pytest.mark.usefixtures("dummy_aws_env")
def test_an_unreachable_store_is_unavailable() -> None:
    port = free_port()  # free a moment ago: nothing listens there now
    archive = S3Archive("bodies", endpoint_url=f"http://127.0.0.1:{port}")
    with pytest.raises(ArchiveUnavailable) as raised:
        archive.put(KEY, b"{}")
    assert isinstance(raised.value.__cause__, EndpointConnectionError)
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)
    with pytest.raises(ArchiveUnavailable):
        list(archive.keys())
    archive.close()


def test_a_missing_bucket_is_unavailable_not_a_missing_body(s3_client: S3Client) -> None:
    """A misconfigured bucket must leave deliveries pending, not fail them."""
    archive = S3Archive("healthlog-no-such-bucket", client=s3_client)
    with pytest.raises(ArchiveUnavailable):
        archive.read(KEY)
    with pytest.raises(ArchiveUnavailable):
        archive.put(KEY, b"{}")


def test_throttling_is_retried_then_unavailable(s3_client: S3Client, s3_bucket: str) -> None:
    archive = S3Archive(s3_bucket, client=s3_client)
    archive.put(KEY, b"{}")
    attempts: list[str] = []

    def slow_down(request: AWSPreparedRequest, **_: object) -> AWSResponse:
        attempts.append(request.method)
        return s3_error(503, "SlowDown")

    with (
        hooked(s3_client, "before-send.s3.GetObject", slow_down),
        pytest.raises(ArchiveUnavailable) as raised,
    ):
        archive.read(KEY)
    assert isinstance(raised.value.__cause__, ClientError)
    assert len(attempts) == 3  # the client's standard retries, then give up


def test_a_put_whose_reply_was_lost_is_not_mistaken_for_a_taken_key(
    s3_client: S3Client, s3_bucket: str
) -> None:
    """The put reached S3 but its reply timed out; botocore's retry then fails the
    If-None-Match precondition against the object the first attempt created."""
    archive = S3Archive(s3_bucket, client=s3_client)
    attempts: list[str] = []

    def lose_first_reply(request: AWSPreparedRequest, **_: object) -> None:
        attempts.append(request.method)
        if len(attempts) == 1:
            # the first attempt reaches S3 (sent as signed, on a connection of its own)...
            assert URLLib3Session().send(request).status_code == 200
            raise ReadTimeoutError(endpoint_url=request.url)  # ...but its reply is lost

    with hooked(s3_client, "before-send.s3.PutObject", lose_first_reply):
        assert archive.put(KEY, b'{"a": 1}') == 8
    assert len(attempts) == 2  # the retry met the first attempt's object
    assert archive.read(KEY) == b'{"a": 1}'


def test_a_retried_put_still_reports_a_key_taken_by_another_body(
    s3_endpoint: str, s3_client: S3Client, s3_bucket: str
) -> None:
    archive = S3Archive(s3_bucket, client=s3_client)
    other = S3Archive(s3_bucket, client=s3.client_for(s3_endpoint))
    attempts: list[str] = []

    def another_writer_first(request: AWSPreparedRequest, **_: object) -> None:
        attempts.append(request.method)
        if len(attempts) == 1:
            other.put(KEY, b'{"other": 1}')
            raise ReadTimeoutError(endpoint_url=request.url)

    with (
        hooked(s3_client, "before-send.s3.PutObject", another_writer_first),
        pytest.raises(AlreadyExists),
    ):
        archive.put(KEY, b'{"a": 1}')
    assert archive.read(KEY) == b'{"other": 1}'
    other.client.close()


def test_a_multipart_completion_whose_reply_was_lost_is_not_mistaken_for_a_taken_key(
    s3_client: S3Client, s3_bucket: str
) -> None:
    """As above, with S3 answering the retried completion 412 (moto would answer 200)."""
    archive = S3Archive(s3_bucket, client=s3_client)
    body = os.urandom(MULTIPART)
    attempts: list[str] = []

    def send_then_lose(request: AWSPreparedRequest, **_: object) -> AWSResponse:
        attempts.append(request.method)
        if len(attempts) == 1:
            assert URLLib3Session().send(request).status_code == 200
            raise ReadTimeoutError(endpoint_url=request.url)
        return s3_error(412, "PreconditionFailed")

    with hooked(s3_client, "before-send.s3.CompleteMultipartUpload", send_then_lose):
        assert stream(archive, KEY, body) == len(body)
    assert archive.read(KEY) == body
    assert open_uploads(s3_client, s3_bucket) == []


# --- opened from the settings ---------------------------------------------------------------


@pytest.mark.usefixtures("dummy_aws_env")
def test_an_s3_url_opens_an_archive_under_its_prefix(
    s3_endpoint: str, s3_client: S3Client, s3_bucket: str
) -> None:
    settings = Settings(archive_url=f"s3://{s3_bucket}/prod", s3_endpoint_url=s3_endpoint)
    archive = wiring.open_archive(settings)
    archive.put(KEY, b"{}")
    assert s3_client.get_object(Bucket=s3_bucket, Key=f"prod/{KEY}")["Body"].read() == b"{}"
    assert list(archive.keys()) == [KEY]
    archive.close()
