"""S3 for the integration tests: moto's HTTP server, once per session, and a fresh
bucket per test. Only dummy credentials are ever used."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests import s3

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with s3.moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def s3_client(s3_endpoint: str) -> Iterator[S3Client]:
    client = s3.client_for(s3_endpoint)
    yield client
    client.close()


@pytest.fixture
def s3_bucket(s3_client: S3Client) -> str:
    name = f"healthlog-test-{uuid.uuid4().hex[:16]}"
    s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def dummy_aws_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """An environment in which boto3's default chain finds only dummy credentials and
    no region, for tests of clients the adapter builds itself."""
    nowhere = tmp_path_factory.mktemp("aws") / "none"
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(nowhere))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(nowhere))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
