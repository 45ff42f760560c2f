"""Moving an embedded installation into the cloud one, as docs/deploy.md tells it.

The embedded install (SQLite in ``var/healthlog.db``, bodies in ``var/archive``) takes
deliveries through ingest and folds them. Then, step by step as in the docs:

1. ``aws s3 sync var/archive s3://BUCKET --exclude ".tmp/*"`` (here: the same upload,
   done with boto3 against moto's S3 server);
2. ``healthlog account export`` / ``account import`` move the accounts with their ids
   and token hashes (the archive's keys carry the account id, and the phone keeps its
   token);
3. ``healthlog reconcile`` with the cloud settings exported journals every body;
4. the cloud's fold function (its Lambda handler, on a scheduled event) folds them.

The cloud showcase must then be the embedded one, byte for byte (the fingerprint), and
every delivery must have the same status and uncovered keys.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from healthlog import cli, tokens
from healthlog.archive.local import MARKER, TMP_DIR, LocalArchive
from healthlog.config import Settings
from healthlog.fold.service import FoldService
from healthlog.ingest import IngestDeps, IngestRequest, accept
from healthlog.ingest.wake import NullWaker
from healthlog.journal.port import Journal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import wiring

from tests import pg
from tests.conftest import SAMPLES
from tests.integration.servers import ROOT

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

EVENTS = ROOT / "tests" / "events"
REGION = "us-east-1"


@pytest.fixture
def cloud_journal_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    kind = getattr(request, "param", "sqlite")
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path}/cloud.db"
        return
    with pg.fresh_database() as url:
        yield url


def embedded_install(var: Path) -> tuple[SqliteJournal, LocalArchive]:
    """An embedded install that took every sample (one twice) and a broken body."""
    settings = Settings(journal_url=f"sqlite:///{var}/healthlog.db", archive_url=f"file://{var}")
    journal = SqliteJournal(str(var / "healthlog.db"))
    journal.migrate()
    archive = LocalArchive(var / "archive")
    deps = IngestDeps(journal, archive, NullWaker(), settings)
    token = tokens.new_token()
    journal.add_account("alice", tokens.hash_token(token))
    bodies = [p.read_bytes() for p in sorted(SAMPLES.glob("*.json"))]
    assert bodies, f"the HAE samples are missing from {SAMPLES}"
    bodies += [bodies[0], b"{ not json }"]
    for body in bodies:
        reply = accept(
            deps,
            IngestRequest(
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                content_length=len(body),
                read=io.BytesIO(body).read,
            ),
        )
        assert reply.status == 200, reply.body
    # a writer that died half-way leaves a temporary file; the sync leaves it behind
    (var / "archive" / TMP_DIR).mkdir(exist_ok=True)
    (var / "archive" / TMP_DIR / "partial-upload").write_bytes(b'{"half": ')
    report = FoldService(journal, archive, settings).run(wait_s=30)
    assert report is not None and report.selected == len(bodies)
    return journal, archive


def s3_sync(folder: Path, s3: S3Client, bucket: str) -> int:
    """``aws s3 sync FOLDER s3://BUCKET --exclude ".tmp/*" --exclude ".healthlog-archive"``
    (docs/deploy.md): each file under its path."""
    sent = 0
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_file() and not key.startswith(f"{TMP_DIR}/") and key != MARKER:
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
            sent += 1
    return sent


def copy_accounts(db: Path, journal_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/deploy.md's move of the accounts: ``account export``, then ``account import``."""
    exported = db.with_name("accounts.jsonl")
    healthlog_logger = logging.getLogger("healthlog")
    saved = (list(healthlog_logger.handlers), healthlog_logger.level)
    try:
        with monkeypatch.context() as env:
            env.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{db}")
            assert cli.main(["account", "export", "--output", str(exported)]) == 0
            env.setenv("HEALTHLOG_JOURNAL_URL", journal_url)
            assert cli.main(["account", "import", str(exported)]) == 0
    finally:
        healthlog_logger.handlers[:], healthlog_logger.level = saved


def statuses(journal: Journal) -> dict[str, tuple[str, tuple[str, ...], int]]:
    return {d.id: (d.status.value, d.uncovered, d.points) for d in journal.deliveries()}


@pytest.mark.parametrize("cloud_journal_url", ["sqlite", "postgres"], indirect=True)
def test_an_embedded_install_moved_to_the_cloud_folds_to_the_same_showcase(
    tmp_path: Path,
    cloud_journal_url: str,
    dummy_aws_env: None,
    monkeypatch: pytest.MonkeyPatch,
    s3_endpoint: str,
    s3_client: S3Client,
    s3_bucket: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    var = tmp_path / "var"
    var.mkdir()
    embedded, _ = embedded_install(var)
    expected = statuses(embedded)
    fingerprint = embedded.fingerprint()
    assert {status for status, _, _ in expected.values()} >= {"parsed", "failed"}

    # 1. the archive
    assert s3_sync(var / "archive", s3_client, s3_bucket) == len(expected)
    # 2. the accounts, into the journal the stack's first cold start migrated
    cloud = wiring.open_journal(Settings(journal_url=cloud_journal_url))
    cloud.migrate()
    copy_accounts(var / "healthlog.db", cloud_journal_url, monkeypatch)
    assert cloud.accounts() == embedded.accounts()
    assert {cloud.token_hash(a.id) for a in cloud.accounts()} == {
        embedded.token_hash(a.id) for a in embedded.accounts()
    }

    # 3. healthlog reconcile, with the cloud settings exported
    for name, value in {
        "AWS_DEFAULT_REGION": REGION,
        "HEALTHLOG_JOURNAL_URL": cloud_journal_url,
        "HEALTHLOG_ARCHIVE_URL": f"s3://{s3_bucket}",
        "HEALTHLOG_S3_ENDPOINT_URL": s3_endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    healthlog_logger = logging.getLogger("healthlog")
    saved = (list(healthlog_logger.handlers), healthlog_logger.level)
    try:
        capsys.readouterr()
        assert cli.main(["reconcile", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report == {
            "seen": len(expected),
            "journalled": len(expected),
            "present": 0,
            "skipped": 0,
            "swept": 0,  # the half-written temporary file stayed on the laptop
        }

        # 4. the cloud's fold function, on its next tick
        spec = importlib.util.spec_from_file_location(
            f"fold_main_{uuid.uuid4().hex[:8]}", ROOT / "functions" / "fold" / "main.py"
        )
        assert spec is not None and spec.loader is not None
        fold = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fold)

        class Context:
            aws_request_id = "move-to-cloud"

            def get_remaining_time_in_millis(self) -> int:
                return 300_000

        scheduled = json.loads((EVENTS / "scheduled_event.json").read_text())
        folded = fold.handler(scheduled, Context())
        fold._service().journal.close()
    finally:
        healthlog_logger.handlers[:], healthlog_logger.level = saved
    assert (folded["selected"], folded["stopped"]) == (len(expected), None)

    assert statuses(cloud) == expected
    assert cloud.fingerprint() == fingerprint
    cloud.close()
    embedded.close()
