"""``healthlog coverage``: days with data, gaps and late points, through the command."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli

from tests.conftest import Phone, metrics_body
from tests.unit.test_cli import env, phone_for, run

__all__ = ["env"]  # the fixture, imported for this module's tests


def steps(*days: str, hour: int = 8) -> tuple[str, str, list[dict[str, object]]]:
    return (
        "step_count",
        "count",
        [{"date": f"{day} {hour:02d}:00:00 +0100", "qty": 10, "source": "Watch"} for day in days],
    )


def weight(*days: str) -> tuple[str, str, list[dict[str, object]]]:
    points = [{"date": f"{day} 07:00:00 +0100", "qty": 70, "source": "Scale"} for day in days]
    return ("weight_body_mass", "kg", points)


@pytest.fixture
def folded(env: Path, capsys: Any) -> Phone:
    phone = phone_for(env)
    phone.send(
        metrics_body(
            steps("2026-03-01", "2026-03-02", "2026-03-05", "2026-03-06", "2026-03-08"),
            weight("2026-03-01", "2026-03-08", "2026-03-15"),
        )
    )
    # the next sync brings a point of the 2nd that the watch wrote late
    phone.send(metrics_body(steps("2026-03-02", hour=15)))
    assert run(capsys, "fold", "--json")["parsed"] == 2
    return phone


def test_coverage_json_gives_days_gaps_and_late_points(folded: Phone, capsys: Any) -> None:
    steps_cov, weight_cov = run(capsys, "coverage", "--json")
    assert steps_cov == {
        "metric": "step_count",
        "first_day": "2026-03-01",
        "last_day": "2026-03-08",
        "days_with_data": 5,
        "daily": True,
        "days": {"2026-03-01": 1, "2026-03-02": 2, "2026-03-05": 1, "2026-03-06": 1,
                 "2026-03-08": 1},
        "gaps": [{"first": "2026-03-03", "last": "2026-03-04", "days": 2},
                 {"first": "2026-03-07", "last": "2026-03-07", "days": 1}],
        "late": {"2026-03-02": 1},
        "late_points": 1,
    }  # fmt: skip
    # three weigh-ins in fifteen days: not a daily metric, so no gaps between them
    assert weight_cov["metric"] == "weight_body_mass"
    assert (weight_cov["daily"], weight_cov["gaps"], weight_cov["days_with_data"]) == (False, [], 3)


def test_coverage_days_prints_a_table_the_gaps_the_late_points_and_how_to_resend(
    folded: Phone, capsys: Any
) -> None:
    out = run(capsys, "coverage", "--days")
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "first", "day", "last", "day", "days", "span", "gaps",
                                "late"]  # fmt: skip
    assert lines[1].split() == ["step_count", "2026-03-01", "2026-03-08", "5", "8", "2", "1"]
    assert lines[2].split() == ["weight_body_mass", "2026-03-01", "2026-03-15", "3", "15", "-", "0"]
    gaps = out.index("Gaps")
    assert out.index("2026-03-03 .. 2026-03-04") > gaps
    assert "step_count        2026-03-07                1 day\n" in out
    late = out.index("Late points per day")
    assert late > gaps and "Since Last Sync" in out[late:]
    assert "step_count        2026-03-02       1" in out[late:]
    hint = out.index("Manual Export")
    assert hint > late and "date range" in out[hint:] and "Export" in out[hint:]
    assert "Watch" not in out and "Scale" not in out  # no source names


def test_coverage_prints_a_summary_a_line_per_metric_and_its_gaps_in_one(
    folded: Phone, capsys: Any
) -> None:
    """Without --days: the table, then each metric's gaps in one line (how many, their
    days, the latest), no list of late points per day, and how to send a gap again."""
    out = run(capsys, "coverage")
    lines = out.splitlines()
    assert lines[1].split() == ["step_count", "2026-03-01", "2026-03-08", "5", "8", "2", "1"]
    assert lines[2].split() == ["weight_body_mass", "2026-03-01", "2026-03-15", "3", "15", "-", "0"]
    gaps = out.index("Gaps (--days lists each one")
    assert "  step_count        2 gaps, 3 days; latest 2026-03-07 (1 day)\n" in out[gaps:]
    assert "2026-03-03 .. 2026-03-04" not in out and "weight_body_mass  " not in out[gaps:]
    assert "Late points per day" not in out and "2026-03-02       1" not in out
    assert out.index("Manual Export") > gaps
    assert run(capsys, "coverage", "--days").startswith("\n".join(lines[:3]))


def test_coverage_of_one_metric_and_a_range(folded: Phone, capsys: Any) -> None:
    (only,) = run(capsys, "coverage", "--metric", "step_count", "--from", "2026-03-05", "--json")
    assert only["days"] == {"2026-03-05": 1, "2026-03-06": 1, "2026-03-08": 1}
    assert only["gaps"] == [{"first": "2026-03-07", "last": "2026-03-07", "days": 1}]
    assert only["late"] == {}
    (weights,) = run(
        capsys, "coverage", "--metric", "weight_body_mass", "--to", "2026-03-09", "--json"
    )
    assert weights["days_with_data"] == 2
    out = run(capsys, "coverage", "--metric", "step_count", "--to", "2026-03-03")
    assert "Gaps" not in out and "Manual Export" not in out
    assert run(capsys, "coverage", "--from", "2027-01-01") == "no metric data (in this range)\n"


def test_an_unknown_metric_is_an_error_naming_the_nearest(folded: Phone, capsys: Any) -> None:
    assert cli.main(["coverage", "--metric", "step_cont"]) == 2
    err = capsys.readouterr().err
    assert "did you mean step_count" in err


def test_coverage_is_per_account_chosen_by_name_or_token(
    folded: Phone, env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bob = phone_for(env, "bob")
    bob.send(metrics_body(steps("2026-04-01")))
    run(capsys, "fold")
    # two accounts: coverage needs to be told whose
    assert cli.main(["coverage"]) == 2
    assert "--account" in capsys.readouterr().err
    (bobs,) = run(capsys, "coverage", "--account", "bob", "--json")
    assert bobs["days"] == {"2026-04-01": 1}
    monkeypatch.setattr("sys.stdin", io.StringIO(folded.token + "\n"))
    alices = run(capsys, "coverage", "--token", "-", "--json")
    assert [c["metric"] for c in alices] == ["step_count", "weight_body_mass"]
    assert cli.main(["coverage", "--account", "carol"]) == 2
    assert "no account named 'carol'" in capsys.readouterr().err
