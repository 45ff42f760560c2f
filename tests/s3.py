"""S3 for tests: moto's S3 server over HTTP, and the adapter's client for it.

    from tests import s3

    with s3.moto_server() as endpoint:
        client = s3.client_for(endpoint)

Here, not in the package: the package ships in the Lambda layer, which carries neither
moto nor these helpers, and ``healthlog.testing`` stays free of boto3. Only dummy
credentials are ever used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import boto3
from healthlog.archive.s3 import make_client
from moto.server import ThreadedMotoServer

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


@contextmanager
def moto_server() -> Iterator[str]:
    """Serve moto's S3 over HTTP on 127.0.0.1 (a free port); yield its endpoint URL.

    A real HTTP server rather than in-process patching, so the adapter's client,
    retries and error parsing run exactly as against S3.
    """
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def client_for(endpoint_url: str) -> S3Client:
    """The adapter's own client for a test endpoint, with dummy credentials only."""
    session = boto3.session.Session(
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # a dummy for moto, never real
        region_name="us-east-1",
    )
    return make_client(endpoint_url, session=session)
