"""The Archive named by a URL (``Settings.archive_url``).

``file://var/archive`` is a folder relative to the working directory,
``file:///srv/healthlog/archive`` an absolute one; ``s3://bucket`` and
``s3://bucket/prefix`` an S3 bucket, optionally under a key prefix.
"""

from __future__ import annotations

from pathlib import Path

from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.archive.s3 import S3Archive
from healthlog.errors import ConfigError


def open_archive(url: str, *, s3_endpoint_url: str = "") -> Archive:
    if url.startswith("file://"):
        path = url.removeprefix("file://")
        if not path:
            raise ConfigError("a file:// archive URL needs a path")
        # resolved now, so that a later chdir cannot move the archive
        return LocalArchive(Path(path).absolute())
    if url.startswith("s3://"):
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        if not bucket:
            raise ConfigError("an s3:// archive URL needs a bucket")
        return S3Archive(bucket, prefix, endpoint_url=s3_endpoint_url)
    raise ConfigError("the archive URL must start with file:// or s3://")
