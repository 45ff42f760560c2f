"""Cold start as documented: a process on SQLite and a folder never imports boto3,
botocore, psycopg or moto.

Each check runs in a fresh interpreter (``python -c``), so nothing this test process
imported counts, and reads that interpreter's ``sys.modules`` at the end. The stack is
the file-backed one: ``wiring`` builds ingest's dependencies and the fold's journal and
archive, and both functions are loaded as functions-framework loads them
(``create_app``) and each answers one request: ingest takes a delivery, the fold folds
it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from healthlog.local.launcher import clean_env, function_source

#: the top-level modules a file-backed process must not load
CLOUD_ONLY = ("boto3", "botocore", "s3transfer", "psycopg", "psycopg_binary", "psycopg_pool")
TEST_ONLY = ("moto",)

_REPORT = f"""
import json, sys
print(json.dumps(sorted(
    name for name in sys.modules if name.split(".")[0] in {CLOUD_ONLY + TEST_ONLY!r}
)))
"""

FILE_BACKED_STACK = f"""
from functions_framework import create_app
from healthlog import tokens
from healthlog.ops import wiring
from healthlog.config import Settings

settings = Settings.from_env()
deps = wiring.ingest_deps(settings)
deps.journal.migrate()
token = tokens.new_token()
deps.journal.add_account("alice", tokens.hash_token(token))
deps.archive.close()
deps.journal.close()
journal, archive = wiring.open_journal(settings), wiring.open_archive(settings)
journal.close()
archive.close()

body = (b'{{"data": {{"metrics": [{{"name": "step_count", "units": "count", "data": '
        b'[{{"date": "2024-06-01 08:00:00 +0100", "qty": 3}}]}}]}}}}')
ingest = create_app("ingest", {str(function_source("ingest"))!r}, "http").test_client()
reply = ingest.post("/", data=body, headers={{"Authorization": "Bearer " + token}})
assert reply.status_code == 200, reply.get_data()
fold = create_app("fold", {str(function_source("fold"))!r}, "http").test_client()
reply = fold.post("/?wait=1")
assert reply.status_code == 200 and reply.get_json()["parsed"] == 1, reply.get_data()
{_REPORT}"""

# the package's modules that the file-backed stack, the command line and the tests'
# fakes use; the S3 and PostgreSQL adapters are the ones left out, on purpose
PACKAGE_WITHOUT_CLOUD_ADAPTERS = f"""
import healthlog.cli, healthlog.config, healthlog.local.launcher, healthlog.local.server
import healthlog.ops.reconcile, healthlog.ops.secrets, healthlog.local.stack, healthlog.testing
import healthlog.urls, healthlog.ingest.wake, healthlog.ops.wiring
import healthlog.archive.local, healthlog.journal.sqlite, healthlog.fold.service
import healthlog.hae
{_REPORT}"""


def loaded_by(code: str, folder: Path) -> list[str]:
    env = clean_env(
        {
            "HEALTHLOG_JOURNAL_URL": f"sqlite:///{folder}/journal.db",
            "HEALTHLOG_ARCHIVE_URL": f"file://{folder}/archive",
            "HEALTHLOG_LOG_LEVEL": "WARNING",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_the_file_backed_stack_imports_no_cloud_driver(tmp_path: Path) -> None:
    assert loaded_by(FILE_BACKED_STACK, tmp_path) == []


def test_the_package_and_its_test_fakes_import_no_cloud_driver_nor_moto(
    tmp_path: Path,
) -> None:
    assert loaded_by(PACKAGE_WITHOUT_CLOUD_ADAPTERS, tmp_path) == []
