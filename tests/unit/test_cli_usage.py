"""The command line as a new user meets it: typed options, ranges, names, clear errors.

Each case of issue #10's "Why" is here, through click's ``CliRunner`` on a real SQLite
journal and archive folder (``cli.cli``, the group the ``healthlog`` script runs), or
through the installed script in a subprocess where a real pipe or terminal matters.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from healthlog import cli
from healthlog.journal.sqlite import SqliteJournal
from healthlog.reads import ranges

from tests.conftest import SAMPLES, Phone, metrics_body
from tests.unit.test_cli import env, phone_for

__all__ = ["env"]  # the fixture, imported for this module's tests

BIN = Path(sys.executable).parent


def invoke(*argv: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli.cli, list(argv), input=stdin, catch_exceptions=False)


def ok(*argv: str) -> Any:
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in argv else result.stdout


def usage_error(result: Result, option: str, *said: str) -> None:
    """Exit 2, the subcommand's usage, the option named, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Usage: healthlog " in result.stderr and "Traceback" not in result.stderr
    assert f"Invalid value for {option}" in result.stderr, result.stderr
    for text in said:
        assert text in result.stderr, result.stderr


def at(*hours_utc: str) -> list[dict[str, object]]:
    """Step counts on 2026-11-30 at these UTC hours, sent on the phone's +01:00 clock."""
    points = []
    for hhmm in hours_utc:
        hour, minute = (int(x) for x in hhmm.split(":"))
        points.append({"date": f"2026-11-30 {hour + 1:02d}:{minute:02d}:00 +0100", "qty": 1})
    return points


@pytest.fixture
def folded(env: Path) -> Phone:
    phone = phone_for(env)
    phone.send(metrics_body(("step_count", "count", at("06:30", "07:00", "08:00"))))
    walk = {"id": "w-1", "name": "Walk", "start": "2026-11-30 07:10:00 +0000",
            "end": "2026-11-30 07:40:00 +0000"}  # fmt: skip
    phone.send({"data": {"workouts": [walk]}})
    assert ok("fold", "--json")["parsed"] == 2
    return phone


def starts(*argv: str) -> list[str]:
    out = ok("export", "--metric", "step_count", *argv)
    return [row["start"][11:16] for row in csv.DictReader(io.StringIO(out))]


# --- dates and ranges --------------------------------------------------------------------------


def test_to_with_an_offset_is_an_instant_and_leaves_the_point_at_it_out(folded: Phone) -> None:
    # 08:00+01:00 is 07:00Z: the half-open range leaves the 07:00Z point out
    assert starts("--to", "2026-11-30T08:00:00+01:00") == ["06:30"]
    assert starts("--to", "2026-11-30T07:00:00Z") == ["06:30"]
    assert starts("--from", "2026-11-30T08:00+01:00") == ["07:00", "08:00"]


def test_a_time_without_an_offset_is_on_the_phones_clock_whatever_the_accounts_zone(
    folded: Phone,
) -> None:
    # the points were recorded at 07:30, 08:00 and 09:00 on the phone's +01:00 clock
    for zone in ("UTC", "Europe/Berlin", "Asia/Tokyo"):
        ok("account", "set-tz", "alice", zone)
        assert starts("--from", "2026-11-30 07:30") == ["06:30", "07:00", "08:00"], zone
        assert starts("--from", "2026-11-30 08:30") == ["08:00"], zone
        assert starts("--from", "2026-11-30 08:00", "--to", "2026-11-30T09:00") == ["07:00"]
        assert starts("--to", "2026-11-30") == []  # the phone's midnight, before them all
        assert starts("--from", "2026-11-30", "--to", "2026-12-01") == [
            "06:30",
            "07:00",
            "08:00",
        ]


def test_an_account_zone_this_machine_does_not_know_is_a_usage_error(folded: Phone) -> None:
    folded.journal.set_time_zone(folded.account.id, "Mars/Olympus")  # restored from elsewhere
    assert starts("--from", "2026-11-30 08:30") == ["08:00"]  # no zone needed
    result = invoke("export", "--metric", "step_count", "--from", "today")
    assert result.exit_code == 2, result.output
    assert "no time zone named 'Mars/Olympus'" in result.stderr, result.stderr
    assert "account set-tz" in result.stderr and "Traceback" not in result.stderr


def test_dates_relative_forms_and_prefixes_are_accepted(folded: Phone) -> None:
    assert starts("--from", "2026-11-30", "--to", "2026-12-01") == ["06:30", "07:00", "08:00"]
    assert starts("--from", "2026-11") == ["06:30", "07:00", "08:00"]
    assert starts("--from", "today") == []  # the points are older than today
    assert starts("--from", "3650d") == ["06:30", "07:00", "08:00"]
    assert starts("--to", "24h") == ["06:30", "07:00", "08:00"]


@pytest.mark.parametrize("value", ["30/11/2026", "2026-13-45", "2026-11-30T25:00", "soon", "7x"])
@pytest.mark.parametrize("option", ["--from", "--to"])
def test_a_bound_that_is_no_date_is_a_usage_error_naming_the_option(
    folded: Phone, option: str, value: str
) -> None:
    usage_error(invoke("export", option, value), f"'{option}'", repr(value))


def test_an_empty_range_is_a_usage_error(folded: Phone) -> None:
    result = invoke("export", "--from", "2026-12-01", "--to", "2026-11-30")
    usage_error(result, "'--from'/'--to'", "is not before")


def test_ranges_parse_each_form() -> None:
    from datetime import UTC, datetime, timedelta
    from zoneinfo import ZoneInfo

    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    tokyo = ZoneInfo("Asia/Tokyo")  # already 2026-11-30 21:00 there: today is the 30th
    cases = {
        # without an offset: a wall-clock time on the phone's clock, the zone unused
        "2026-11-30": datetime(2026, 11, 30),
        "2026-11-30T08:00": datetime(2026, 11, 30, 8, 0),
        "2026-11-30 08:00:00.5": datetime(2026, 11, 30, 8, 0, 0, 500000),
        "2026": datetime(2026, 1, 1),
        # today's date on the zone, its midnight on the phone's clock
        "today": datetime(2026, 11, 30),
        "yesterday": datetime(2026, 11, 29),
        # with an offset, or relative to now: that instant
        "2026-11-30T08:00+02:00": datetime(2026, 11, 30, 6, 0, tzinfo=UTC),
        "2026-11-30T08:00Z": datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
        "7d": now - timedelta(days=7),
        "24h": now - timedelta(hours=24),
        "90m": now - timedelta(minutes=90),
        "2w": now - timedelta(weeks=2),
    }
    for text, expected in cases.items():
        assert ranges.parse(text).at(tokyo, now) == expected, text
    late = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)  # 01:00 on Dec 1 in Tokyo
    assert ranges.parse("today").at(tokyo, late) == datetime(2026, 12, 1)
    assert ranges.parse("today").at(UTC, late) == datetime(2026, 11, 30)


# --- no silent empty journal ----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [["status"], ["export"], ["deliveries"], ["metrics"], ["fold"], ["replay", "--all"],
     ["reconcile"], ["coverage"], ["account", "list"], ["account", "export"],
     ["account", "rotate", "x"], ["account", "set-tz", "x", "UTC"]],
)  # fmt: skip
def test_outside_the_project_folder_nothing_creates_a_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    for name in ("HEALTHLOG_JOURNAL_URL", "HEALTHLOG_ARCHIVE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    result = invoke(*argv)
    assert result.exit_code == 2, result.output
    assert f"no journal at {tmp_path}/var/healthlog.db" in result.stderr
    assert "HEALTHLOG_JOURNAL_URL" in result.stderr and "-C FOLDER" in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "var").exists()


def test_dash_c_points_at_the_folder_that_holds_var(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HEALTHLOG_JOURNAL_URL", "HEALTHLOG_ARCHIVE_URL"):
        monkeypatch.delenv(name, raising=False)
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    made = invoke("-C", str(home), "account", "add", "bob")
    assert made.exit_code == 0 and "creating a new journal at" in made.stderr
    assert (home / "var" / "healthlog.db").is_file()
    assert [a["name"] for a in ok("--home", str(home), "account", "list", "--json")] == ["bob"]
    result = invoke("-C", str(tmp_path / "nope"), "status")
    assert result.exit_code == 2 and "'-C' / '--home'" in result.stderr


def test_a_read_only_command_does_not_migrate(env: Path) -> None:
    journal = SqliteJournal(str(env / "journal.db"))
    journal.migrate(target=6)
    journal.close()
    before = (env / "journal.db").read_bytes()
    result = invoke("status")
    assert result.exit_code == 2 and "healthlog migrate" in result.stderr
    assert (env / "journal.db").read_bytes() == before
    assert ok("migrate", "--json")["to"] > 6
    assert ok("status", "--json")["backlog"] == 0


# --- names -------------------------------------------------------------------------------------


def test_metrics_lists_names_fields_units_points_and_extent(folded: Phone) -> None:
    (alice,) = ok("metrics", "--json")
    assert alice["account"] == "alice"
    assert alice["metrics"] == [
        {"metric": "step_count", "field": "qty", "unit": "count", "kind": "cumulative",
         "points": 3, "first": "2026-11-30T06:30:00.000000Z",
         "last": "2026-11-30T08:00:00.000000Z", "sources": [""]},
    ]  # fmt: skip
    assert alice["sections"] == {"workouts": 1}
    text = ok("metrics")
    assert "step_count" in text and "qty" in text and "2026-11-30 06:30Z" in text
    assert "records: workouts 1" in text


def test_an_unknown_metric_or_section_names_the_nearest(folded: Phone) -> None:
    usage_error(invoke("export", "--metric", "stepcount"), "'--metric'", "did you mean step_count")
    usage_error(invoke("export", "--section", "workout"), "'--section'", "did you mean workouts")
    usage_error(invoke("export", "--section", "bogus"), "'--section'", "healthlog metrics")
    assert ok("export", "--section", "workouts", "--format", "jsonl").count("\n") == 1


@pytest.mark.parametrize(("fmt", "written"), [("jsonl", ""), ("csv", "account_id,section,")])
def test_a_known_section_with_no_records_yet_exports_empty(
    folded: Phone, fmt: str, written: str
) -> None:
    result = invoke("export", "--section", "medications", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(written) and result.stdout.count("\n") <= 1
    assert "no medications records yet" in result.stderr


@pytest.mark.parametrize("name", ["", " bob", "bob ", "a\x1bb", "x" * 65, "tab\there"])
def test_account_names_are_checked(env: Path, name: str) -> None:
    usage_error(invoke("account", "add", name), "'NAME'")
    assert not (env / "journal.db").exists()


def test_an_account_export_of_a_bad_name_is_refused_at_import(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok("account", "add", "alice")
    exported = ok("account", "export")
    row = json.loads(exported)
    bad = json.dumps({**row, "name": "", "id": "other"}) + "\n"
    result = invoke("account", "import", "-", stdin=bad)
    assert result.exit_code == 2 and "line 1: not an account" in result.stderr
    # and the documented backup of good names restores whole
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{env / 'other.db'}")
    result = invoke("account", "import", "-", "--json", stdin=exported)
    assert result.exit_code == 0 and json.loads(result.stdout) == {"imported": 1, "skipped": 0}


# --- errors that were tracebacks --------------------------------------------------------------


def test_bad_values_are_usage_errors_of_the_subcommand(folded: Phone, env: Path) -> None:
    usage_error(invoke("deliveries", "--limit", "-1"), "'--limit'")
    usage_error(invoke("deliveries", "--status", "nope"), "'--status'")
    usage_error(invoke("export", "-o", "/nonexistent/x.csv"), "'-o' / '--output'", "/nonexistent")
    usage_error(invoke("export", "-o", str(env)), "'-o' / '--output'", "is a folder")
    usage_error(invoke("serve", "--port", "0"), "'--port'")
    usage_error(invoke("account", "set-tz", "alice", "Mars/Olympus"), "'ZONE'")
    result = invoke("export", "--bogus")
    assert result.exit_code == 2 and "Usage: healthlog export" in result.stderr
    assert "No such option '--bogus'" in result.stderr


def test_version_and_help_read_cleanly() -> None:
    from importlib.metadata import version

    result = invoke("--version")
    assert (
        result.exit_code == 0
        and result.stdout.strip() == f"healthlog, version {version('healthlog')}"
    )
    for argv in ([], ["export"], ["account", "add"], ["replay"]):
        shown = invoke(*argv, "--help")
        assert shown.exit_code == 0
        assert "``" not in shown.stdout and "Settings" not in shown.stdout, argv
    export_help = invoke("export", "--help").stdout
    assert "--from" in export_help and "yesterday" in export_help and "--verbose" in export_help


def test_shell_completion_is_offered_by_the_installed_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN / "healthlog")],
        env={**os.environ, "_HEALTHLOG_COMPLETE": "bash_source"},
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "_healthlog_completion" in done.stdout
    done = subprocess.run(
        [str(BIN / "healthlog")],
        env={**os.environ, "_HEALTHLOG_COMPLETE": "bash_complete", "COMP_WORDS": "healthlog ex",
             "COMP_CWORD": "1"},
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert "export" in done.stdout


def test_export_into_a_closed_pipe_stops_quietly(folded: Phone, env: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k.startswith(("HEALTHLOG_", "PATH"))}
    many = metrics_body(("heart_rate", "count/min",
                         [{"date": f"2026-10-{d:02d} {h:02d}:00:00 +0000", "qty": 60}
                          for d in range(1, 31) for h in range(24)]))  # fmt: skip
    folded.send(many)
    ok("fold")
    done = subprocess.run(  # noqa: S602 (a real pipe into head, our own command)
        f"{BIN / 'healthlog'} export --format jsonl | head -1",
        shell=True, env=environ, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


# --- output -------------------------------------------------------------------------------


def test_deliveries_have_a_header_and_replay_says_yes_or_no(folded: Phone) -> None:
    lines = ok("deliveries").splitlines()
    assert lines[0].split() == ["received", "(UTC)", "id", "status", "size", "points",
                                "records", "uncovered", "failure", "body"]  # fmt: skip
    assert len(lines) == 3
    text = ok("replay", "--all")
    assert "showcase changed: no" in text and "False" not in text
    result = invoke("replay", "--all", "--status", "parsed")
    assert result.exit_code == 2 and "one of --all, --status" in result.stderr


def test_a_workouts_delivery_counts_its_records(folded: Phone) -> None:
    """Not "0 points" and nothing else: its workouts are counted beside its points."""
    workouts = SAMPLES / "workouts_v1_walking_route-latlon_elevation_2021_irvinlim-test.json"
    delivery = folded.send(workouts.read_bytes())
    ok("fold")
    (row,) = [d for d in ok("deliveries", "--json") if d["id"] == delivery]
    held = folded.journal.export_records(account_id=folded.account.id, with_items=False)
    assert row["records"] == sum(1 for r in held if r.delivery_id == delivery) > 0
    (line,) = [line for line in ok("deliveries").splitlines() if delivery in line]
    assert f" {row['points']:,} " in line and f" {row['records']:,} " in line


def test_set_tz_takes_json(env: Path) -> None:
    ok("account", "add", "alice")
    changed = ok("account", "set-tz", "alice", "Europe/Berlin", "--json")
    assert changed["name"] == "alice" and changed["time_zone"] == "Europe/Berlin"


def test_commands_log_warnings_only_unless_verbose(folded: Phone, env: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "HEALTHLOG_LOG_LEVEL"}
    quiet = subprocess.run([str(BIN / "healthlog"), "reconcile"], env=environ,
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    (env / "archive" / ".tmp").mkdir(exist_ok=True)
    (env / "archive" / ".tmp" / "old").write_bytes(b"{")
    os.utime(env / "archive" / ".tmp" / "old", (0, 0))
    loud = subprocess.run([str(BIN / "healthlog"), "reconcile", "--verbose"], env=environ,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    lines = [json.loads(line) for line in loud.stderr.splitlines()]
    assert any(line["event"] == "reconcile.swept" for line in lines), loud.stderr
    for line in lines:
        assert line["ts"].endswith("Z") and len(line["ts"]) == len("2026-01-02T07:00:00.123Z")


def test_a_progress_line_counts_and_clears_and_is_silent_when_off() -> None:
    from healthlog.cli.progress import Progress

    stream = io.StringIO()
    with Progress("replay", "deliveries", enabled=True, total=4, stream=stream) as bar:
        for done in range(1, 5):
            bar.update(done)
    drawn = stream.getvalue()
    assert "\rreplay: 4/4 deliveries (100%)" in drawn and "/s" in drawn
    assert drawn.endswith("\r")  # cleared for the command's own output
    quiet = io.StringIO()
    with Progress("export", "points", enabled=False, stream=quiet) as bar:
        assert list(bar.wrap(range(3))) == [0, 1, 2]
    assert quiet.getvalue() == "" and bar.count == 3
    counting = io.StringIO()
    with Progress("export", "points", enabled=True, total=300, stream=counting) as bar:
        assert sum(bar.wrap(range(300))) == sum(range(300))
    assert bar.count == 300 and "\rexport: 300/300 points (100%)" in counting.getvalue()


def test_no_progress_line_off_a_terminal(folded: Phone) -> None:
    result = invoke("replay", "--all")
    assert result.exit_code == 0 and result.stderr == ""


def test_converted_values_are_exported_to_the_precision_the_conversion_justifies(
    env: Path,
) -> None:
    from healthlog.hae.units import justified

    phone = phone_for(env)
    weigh = [{"date": "2026-11-30 08:00:00 +0100", "qty": 165.3, "source": "Scale"}]
    kilos = [{"date": "2026-11-30 08:00:00 +0100", "qty": 74.97881876100001, "source": "S"}]
    temperature = [{"date": "2026-11-30 08:00:00 +0100", "qty": 98.6, "source": "T"}]
    phone.send(metrics_body(("weight_body_mass", "lb", weigh), ("lean_body_mass", "kg", kilos),
                            ("body_temperature", "degF", temperature)))  # fmt: skip
    ok("fold")
    rows = {r["metric"]: r for r in csv.DictReader(io.StringIO(ok("export")))}
    assert (rows["weight_body_mass"]["qty"], rows["weight_body_mass"]["unit"]) == ("74.979", "kg")
    assert rows["lean_body_mass"]["qty"] == "74.97881876100001"  # sent in kg: as sent
    assert rows["body_temperature"]["qty"] == "37.0"
    assert justified(236.5882365, 8, 29.5735295625) == 237  # 8 fl oz in mL
    assert justified(177.8, 70, 2.54) == 177.8  # 70 in in cm
    assert justified(4.9889664, 3.1, 1.609344) == 4.99  # 3.1 mi in km


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--metric", "zzzz_unknown"],
        ["coverage", "--metric", "zzzz_unknown"],
        ["plot", "zzzz_unknown", "-o", "out.svg"],
    ],
)
def test_posted_names_in_a_usage_error_are_escaped_for_the_terminal(
    folded: Phone, argv: list[str]
) -> None:
    evil = "zzzz_\x1b]0;pwned\x07\u202eevil"
    points = [{"date": "2026-11-30 08:00:00 +0100", "qty": 1}]
    folded.send(metrics_body((evil, "count", points)))
    assert ok("fold", "--json")["parsed"] == 1
    result = invoke(*argv)
    assert result.exit_code == 2, result.output
    assert "zzzz_\\x1b]0;pwned\\x07\\u202eevil" in result.stderr, result.stderr
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr


def test_export_to_a_terminal_escapes_what_a_phone_posted(folded: Phone) -> None:
    """On a terminal (a real pty), a source name cannot retitle the window or reorder
    the line; written to a pipe or a file, the export is byte for byte what was stored."""
    import pty

    evil = "Watch\x1b]0;pwned\x07\u202e"
    points = [{"date": "2026-11-30 10:00:00 +0100", "qty": 5, "source": evil}]
    folded.send(metrics_body(("step_count", "count", points)))
    ok("fold")
    argv = [
        str(BIN / "healthlog"),
        "export",
        "--metric",
        "step_count",
        "--from",
        "2026-11-30T10:00",
    ]
    main, child = pty.openpty()
    try:
        done = subprocess.run(argv, stdout=child, stderr=subprocess.PIPE, timeout=60, check=False)
        os.close(child)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the pty's other end is closed: all is read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
    assert done.returncode == 0, done.stderr
    shown = b"".join(chunks).decode()
    assert "Watch\\x1b]0;pwned\\x07\\u202e" in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    piped = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert evil in piped.stdout  # a file or a pipe keeps the data as it is


def test_mcp_without_its_extra_names_it_in_one_line(tmp_path: Path) -> None:
    # the extra's pydantic made unimportable, as in an install without healthlog[mcp]
    blocked = tmp_path / "blocked" / "pydantic"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('not installed (the test)')\n")
    done = subprocess.run(
        [str(BIN / "healthlog"), "mcp", "--account", "alice"],
        env={**os.environ, "PYTHONPATH": str(blocked.parent)},
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == "healthlog: healthlog mcp needs the extra: pip install 'healthlog[mcp]'\n"
