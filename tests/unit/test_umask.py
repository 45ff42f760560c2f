"""Folders 0700 and files 0600 for everything that holds health data, whatever the umask.

Run in a child process: the umask belongs to the whole process, and this test's
threads must not create files under ``umask 000``.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import os, sys
from pathlib import Path
os.umask(int(sys.argv[2], 8))
root = Path(sys.argv[1])
from healthlog.archive.local import LocalArchive
from healthlog.journal.sqlite import SqliteJournal
journal = SqliteJournal(str(root / "var" / "db" / "healthlog.db"))
journal.migrate()
with journal.fold_lock() as held:
    assert held
journal.close()
archive = LocalArchive(root / "store" / "archive")
archive.put("acct/2026-01-01/body.json", b"{}")
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", ["000", "022", "077"])
def test_everything_that_holds_health_data_is_the_owners_only(tmp_path: Path, umask: str) -> None:
    subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), umask], check=True)

    folders = [
        tmp_path / "var",
        tmp_path / "var" / "db",
        tmp_path / "store",
        tmp_path / "store" / "archive",
        tmp_path / "store" / "archive" / ".tmp",
        tmp_path / "store" / "archive" / "acct",
        tmp_path / "store" / "archive" / "acct" / "2026-01-01",
    ]
    files = [
        tmp_path / "var" / "db" / "healthlog.db",
        tmp_path / "var" / "db" / "healthlog.db.fold-lock",
        tmp_path / "store" / "archive" / "acct" / "2026-01-01" / "body.json",
    ]
    assert {str(f.relative_to(tmp_path)): oct(mode(f)) for f in folders} == {
        str(f.relative_to(tmp_path)): "0o700" for f in folders
    }
    assert {str(f.relative_to(tmp_path)): oct(mode(f)) for f in files} == {
        str(f.relative_to(tmp_path)): "0o600" for f in files
    }
