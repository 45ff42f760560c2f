"""S3Archive.sweep's age filter, which moto cannot show (it dates every upload 2010).

The client here stands in for boto3's (not for our code); the contract suite runs the
real adapter against moto's server for everything else.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from healthlog.archive.s3 import S3Archive


class Uploads:
    def __init__(self, initiated: dict[str, datetime]) -> None:
        self.initiated = initiated
        self.aborted: list[tuple[str, str]] = []
        self.prefixes: list[str] = []

    def get_paginator(self, name: str) -> Any:
        assert name == "list_multipart_uploads"
        uploads = self

        class Pages:
            def paginate(self, *, Bucket: str, Prefix: str) -> list[dict[str, Any]]:
                uploads.prefixes.append(Prefix)
                return [
                    {"Uploads": [{"Key": k, "UploadId": f"id-{k}", "Initiated": at}]}
                    for k, at in uploads.initiated.items()
                ]

        return Pages()

    def abort_multipart_upload(self, *, Bucket: str, Key: str, UploadId: str) -> None:
        self.aborted.append((Key, UploadId))


def test_only_uploads_begun_before_the_age_are_aborted_under_the_prefix() -> None:
    now = datetime.now(UTC)
    client = Uploads(
        {"bodies/old": now - timedelta(hours=2), "bodies/new": now - timedelta(minutes=5)}
    )
    archive = S3Archive("bucket", "bodies", client=client)  # type: ignore[arg-type]

    assert archive.sweep(older_than_s=3600) == 1

    assert client.aborted == [("bodies/old", "id-bodies/old")]
    assert client.prefixes == ["bodies/"]
