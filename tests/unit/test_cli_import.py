"""`healthlog import`: the Health app's export through the command line, in-process.

The importer itself is tested in tests/integration/test_import.py (both backends, S3,
refusals, kills); here the command: its account choice, its report, its errors, and
that what it folded is what `status` and `export` then show.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli

from tests.unit.test_cli import env, phone_for, run  # noqa: F401 (env is a fixture)

EXPORT = Path(__file__).resolve().parents[1] / "fixtures" / "applehealth"


def test_import_of_a_folder_folds_it_and_status_and_export_agree(
    env: Path,  # noqa: F811
    capsys: Any,
) -> None:
    phone_for(env)
    report = run(capsys, "import", str(EXPORT), "--json")
    assert report["kind"] == "folder"
    assert report["status"] in ("parsed", "partial")
    assert report["points"] > 0 and report["records"] > 0
    status = run(capsys, "status", "--json")
    assert status["counts"][report["status"]] == 1
    assert status["points"] == report["points"]
    # every stored point; by default the export leaves out what the overlap rule counts
    # nothing of (the fixture's iPhone and Watch count the same steps)
    exported = run(capsys, "export", "--format", "jsonl", "--every-point")
    rows = [json.loads(line) for line in exported.splitlines() if line]
    assert len(rows) == report["points"]
    assert {row["delivery_id"] for row in rows} == {report["delivery_id"]}
    counted = run(capsys, "export", "--format", "jsonl")
    kept = [json.loads(line) for line in counted.splitlines() if line]
    assert all(row in rows for row in kept) and len(kept) < len(rows)
    assert all(row["counted"] == 0 for row in rows if row not in kept)
    listed = run(capsys, "deliveries", "--json")
    (delivery,) = listed
    assert delivery["id"] == report["delivery_id"] and delivery["status"] == report["status"]


def test_import_without_fold_leaves_it_pending_for_the_next_pass(
    env: Path,  # noqa: F811
    capsys: Any,
) -> None:
    phone_for(env)
    bare = env / "export.xml"
    shutil.copyfile(EXPORT / "export.xml", bare)
    report = run(capsys, "import", str(bare), "--no-fold", "--json")
    assert (report["kind"], report["status"], report["outcome"]) == ("xml", "pending", None)
    text = run(capsys, "import", str(bare), "--no-fold")
    assert "not folded now" in text
    folded = run(capsys, "fold", "--json")
    assert folded["parsed"] + folded["partial"] == 2


def test_what_is_not_an_export_is_one_line_and_exit_2(
    env: Path,  # noqa: F811
    capsys: Any,
) -> None:
    phone_for(env)
    junk = env / "notes.txt"
    junk.write_text("not an export\n")
    assert cli.main(["import", str(junk)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("healthlog: ") and err.count("\n") == 1
    assert "not an export" not in err  # the file's content is never quoted


def test_with_several_accounts_import_needs_one_named(
    env: Path,  # noqa: F811
    capsys: Any,
) -> None:
    phone_for(env, "alice")
    phone_for(env, "bob")
    assert cli.main(["import", str(EXPORT)]) == 2
    assert "--account" in capsys.readouterr().err
    report = run(capsys, "import", str(EXPORT), "--account", "bob", "--json")
    assert report["points"] > 0


@pytest.mark.parametrize("missing", ["nowhere.zip"])
def test_a_missing_path_is_a_usage_error_naming_it(
    env: Path,  # noqa: F811
    capsys: Any,
    missing: str,
) -> None:
    phone_for(env)
    assert cli.main(["import", str(env / missing)]) == 2
    err = capsys.readouterr().err
    assert "PATH" in err and "does not exist" in err


HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en_GB">\n'
STEPS = (
    ' <Record type="HKQuantityTypeIdentifierStepCount" sourceName="Ada’s Watch" unit="count"'
    ' startDate="2024-03-30 08:00:00 +0100" endDate="2024-03-30 08:10:00 +0100" value="12"/>\n'
)


@pytest.mark.parametrize(
    ("xml", "said"),
    [
        # not one element readable: the delivery fails, and the line says where
        (HEAD.replace("<HealthData", "<HealthData <"), r"failed: .*line 2, column \d+"),
        # a sample folded, then the file breaks off: what was read is kept
        (HEAD + STEPS + ' <Record type="x"\n', r"not read to its end: .*line 5, column 1"),
        # well-formed, but nothing in it healthlog reads
        (HEAD + ' <Audiogram startDate="2024-03-30 08:00:00 +0100"/>\n</HealthData>\n', "nothing"),
    ],
)
def test_an_import_that_fails_or_folds_nothing_exits_1_and_says_why(
    env: Path,  # noqa: F811
    capsys: Any,
    xml: str,
    said: str,
) -> None:
    phone_for(env)
    path = env / "export.xml"
    path.write_text(xml, encoding="utf-8")
    assert cli.main(["import", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    json.loads(captured.out)  # the report is still written
    last = captured.err.splitlines()[-1]  # after the fold's own log lines
    assert re.search(said, last), captured.err
    assert last.startswith("healthlog: ")
    assert "Ada" not in captured.err and "Traceback" not in captured.err
