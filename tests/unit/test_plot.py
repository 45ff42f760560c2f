"""healthlog plot: pictures of real and synthetic data, folded into a real SQLite journal.

The command runs in-process (``cli.main``) with the journal's URL in the environment;
the pictures are read back: a PNG's size and colours (Pillow), an SVG's marks (its XML:
the drawing gives each bar, the line and the band an id). The numbers behind the marks
are checked against the read module and against sums made here from the points sent.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli, tokens
from healthlog.archive.local import LocalArchive
from healthlog.cli import pictures as plot
from healthlog.journal.sqlite import SqliteJournal
from healthlog.reads import Reads, Resolution, auto_resolution
from PIL import Image

from tests.conftest import SAMPLES, Phone, metrics_body

SVG = "{http://www.w3.org/2000/svg}"
FIXTURES = SAMPLES.parent

# heart rate every hour on 2026-01-01..03 and 2026-01-06..07, at +01:00: days 4 and 5 are a gap
HR_DAYS = [1, 2, 3, 6, 7]
# steps on five days (none on the 3rd), two entries a day
STEP_DAYS = [1, 2, 4, 5, 6]


def hr_points() -> list[dict[str, object]]:
    points: list[dict[str, object]] = []
    for day in HR_DAYS:
        for hour in range(0, 24, 3):
            avg = 55 + day + hour
            points.append(
                {
                    "date": f"2026-01-{day:02d} {hour:02d}:00:00 +0100",
                    "Min": avg - 8,
                    "Avg": avg,
                    "Max": avg + 20,
                    "source": "Watch",
                }
            )
    return points


def step_points() -> list[dict[str, object]]:
    return [
        {"date": f"2026-01-{day:02d} {hour:02d}:30:00 +0100", "qty": 1000 * day + 7 * hour}
        for day in STEP_DAYS
        for hour in (9, 18)
    ]


def phone_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Phone:
    """A new journal and archive in ``tmp_path``, the CLI's environment naming them, and
    a phone of a new account ``name`` (close its journal before the CLI folds)."""
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{tmp_path}/journal.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path}/archive")
    monkeypatch.setenv("HEALTHLOG_LOG_LEVEL", "WARNING")
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account(name, tokens.hash_token(token))
    return Phone(journal, LocalArchive(tmp_path / "archive"), account, token)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Path:
    """A journal with real HAE samples and the synthetic series above, folded."""
    phone = phone_in(tmp_path, monkeypatch, "alice")
    journal = phone.journal
    for sample in sorted(SAMPLES.glob("*.json")):
        phone.send(sample.read_bytes())
    for name in ("metrics_heart_rate.json", "sleep_unaggregated_9x.json"):
        phone.send((FIXTURES / name).read_bytes())
    phone.send(
        metrics_body(
            ("heart_rate", "count/min", hr_points()), ("step_count", "count", step_points())
        )
    )
    journal.close()
    assert cli.main(["fold"]) == 0
    capsys.readouterr()
    return tmp_path


def reads_of(folder: Path) -> Reads:
    journal = SqliteJournal(str(folder / "journal.db"))
    return Reads(journal, journal.accounts()[0])


def plot_cmd(capsys: Any, *argv: str) -> tuple[int, str]:
    code = cli.main(["plot", *argv])
    captured = capsys.readouterr()
    return code, captured.err or captured.out


def svg_marks(path: Path, prefix: str) -> list[ET.Element]:
    root = ET.parse(path).getroot()  # noqa: S314 (our own file)
    return [g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith(prefix)]


def path_of(group: ET.Element) -> str:
    found = group.find(f"{SVG}path")
    assert found is not None
    return found.get("d", "")


def numbers(d: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", d)]


def bar_height(group: ET.Element) -> float:
    ys = numbers(path_of(group))[1::2]
    return max(ys) - min(ys)


def svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()  # noqa: S314 (our own file)
    return " ".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))


# --- cumulative: bars ------------------------------------------------------------------------


def test_steps_draw_a_bar_per_day_with_data_and_their_heights_are_the_day_sums(
    env: Path, capsys: Any
) -> None:
    out = env / "steps.svg"
    code, said = plot_cmd(
        capsys, "step_count", "--from", "2026-01-01", "--resolution", "day", "-o", str(out)
    )
    assert code == 0, said
    bars = svg_marks(out, "series-bar-")
    assert len(bars) == len(STEP_DAYS)  # a bar a day with data: none for the 3rd
    expected: dict[str, float] = defaultdict(float)
    for point in step_points():
        expected[str(point["date"])[:10]] += float(point["qty"])  # type: ignore[arg-type]
    series = reads_of(env).series("step_count", start="2026-01-01", resolution=Resolution.DAY)
    assert {s.t: s.value for s in series.samples} == expected  # the read module's sums
    # a linear axis from 0: the bars' heights are in the ratio of the sums
    heights = [bar_height(g) for g in bars]
    sums = [expected[day] for day in sorted(expected)]
    for height, total in zip(heights, sums, strict=True):
        assert height / heights[0] == pytest.approx(total / sums[0], rel=1e-3)
    text = svg_text(out)
    assert "step_count" in text and "2026-01-01 to 2026-01-06" in text and "day" in text
    assert "count per day" in text  # the unit on the y axis


def test_real_minute_steps_at_hour_resolution_sum_per_hour(env: Path, capsys: Any) -> None:
    out = env / "real.svg"
    code, said = plot_cmd(
        capsys, "step_count", "--to", "2022", "--resolution", "hour", "-o", str(out)
    )
    assert code == 0, said
    series = reads_of(env).series("step_count", end="2022", resolution=Resolution.HOUR)
    assert [s.t for s in series.samples] == ["2021-03-14T00:00", "2021-03-14T01:00"]
    assert series.samples[0].value == 34 + 25
    heights = [bar_height(g) for g in svg_marks(out, "series-bar-")]
    assert len(heights) == 2
    values = [s.value or 0.0 for s in series.samples]
    assert heights[1] / heights[0] == pytest.approx(values[1] / values[0], rel=1e-3)


def test_png_has_its_size_and_the_series_colour(env: Path, capsys: Any) -> None:
    out = env / "steps.png"
    code, said = plot_cmd(capsys, "step_count", "--from", "2026", "-o", str(out))
    assert code == 0, said
    assert said.strip() == f"wrote {out}"
    with Image.open(out) as image:
        assert image.format == "PNG"
        assert image.size == (int(plot.SIZE[0] * plot.DPI), int(plot.SIZE[1] * plot.DPI))
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 1  # not blank
    series = tuple(int(plot.COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    assert dict((c, n) for n, c in colours).get(series, 0) > 500  # the bars, filled


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_the_file_is_its_owners_only_under_a_common_umask(
    env: Path, capsys: Any, suffix: str
) -> None:
    """As every file -o writes (a plot shows health data): 0600 under umask 022, a new
    file and one that was there readable by everyone."""
    import os
    import stat

    new, old = env / f"new.{suffix}", env / f"old.{suffix}"
    old.write_bytes(b"")
    old.chmod(0o644)
    was = os.umask(0o022)
    try:
        for out in (new, old):
            code, said = plot_cmd(capsys, "step_count", "--from", "2026", "-o", str(out))
            assert code == 0, said
    finally:
        os.umask(was)
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in (new, old)} == {
        new.name: "0o600",
        old.name: "0o600",
    }
    assert old.stat().st_size > 0


# --- discrete: a line over a band ------------------------------------------------------------


def test_heart_rate_line_breaks_at_the_gap_and_is_not_interpolated(env: Path, capsys: Any) -> None:
    out = env / "hr.svg"
    code, said = plot_cmd(
        capsys, "heart_rate", "--field", "avg", "--from", "2025-12-31T23", "--resolution", "day",
        "-o", str(out),
    )  # fmt: skip
    assert code == 0, said
    (line,) = svg_marks(out, "series-line")
    d = path_of(line)
    assert d.count("M") == 2  # two runs: days 1-3 and days 6-7
    assert len(numbers(d)) == 2 * len(HR_DAYS)  # one vertex a day, none made up in the gap
    assert svg_marks(out, "series-band")  # the min-max band
    text = svg_text(out)
    assert "heart_rate" in text and "avg" in text and "count/min" in text
    # the line's values are the read module's averages
    series = reads_of(env).series(
        "heart_rate", field="avg", start="2025-12-31T23", resolution=Resolution.DAY
    )
    drawn = plot.plot_series(series, env / "again.svg")
    assert drawn.values == [s.value for s in series.samples]
    assert (drawn.marks, drawn.segments) == (len(HR_DAYS), 2)
    by_day = {
        f"2026-01-{day:02d}": sum(55 + day + h for h in range(0, 24, 3)) / 8 for day in HR_DAYS
    }
    assert {s.t: s.value for s in series.samples} == pytest.approx(by_day)


def test_hour_buckets_break_where_hours_are_missing(env: Path, capsys: Any) -> None:
    out = env / "hours.svg"
    code, said = plot_cmd(
        capsys, "heart_rate", "--field", "avg", "--from", "2026-01-01", "--to", "2026-01-02",
        "-o", str(out),
    )  # fmt: skip
    assert code == 0, said  # one day: hour buckets (a point every three hours: all gaps)
    assert "hour" in svg_text(out)
    d = path_of(svg_marks(out, "series-line")[0])
    # 2026-01-01 00:00 UTC onwards: +01:00 points at 01:00 ... 22:00 local, 8 of them
    assert d.count("M") == len(numbers(d)) // 2


def test_raw_points_keep_their_offset_in_the_axis_label(env: Path, capsys: Any) -> None:
    out = env / "raw.svg"
    code, said = plot_cmd(
        capsys,
        "heart_rate",
        "--field",
        "avg",
        "--from",
        "2026-01-05T23",  # UTC: 2026-01-06 00:00 at +01:00 is in
        "--resolution",
        "raw",
        "--source",
        "Watch",
        "-o",
        str(out),
    )
    assert code == 0, said
    text = svg_text(out)
    assert "UTC+01:00" in text and "raw" in text
    d = path_of(svg_marks(out, "series-line")[0])
    assert d.count("M") == 1 and len(numbers(d)) == 2 * 16  # evenly spaced: no gap
    assert svg_marks(out, "series-band")  # the Min and Max sent beside each Avg


def test_gaps_rule() -> None:
    day = [datetime(2026, 1, d) for d in (1, 2, 3, 6)]
    assert plot.gaps(day, Resolution.DAY) == {3}
    months = [datetime(2025, m, 1) for m in (11, 12)] + [datetime(2026, 1, 1)]
    assert plot.gaps(months, Resolution.MONTH) == set()
    assert plot.gaps([*months, datetime(2026, 3, 1)], Resolution.MONTH) == {3}
    t0 = datetime(2026, 1, 1)
    raw = [t0 + timedelta(minutes=m) for m in (0, 5, 10, 15, 120, 125)]
    assert plot.gaps(raw, Resolution.RAW) == {4}

    # a picture's resolution: at most PLOT_BUCKETS bars over the span (reads.resolution_for)
    def pick(span: timedelta) -> Resolution:
        return auto_resolution(t0, t0 + span, plot.PLOT_BUCKETS)

    assert pick(timedelta(hours=5)) is Resolution.MINUTE
    assert pick(timedelta(days=31)) is Resolution.DAY
    assert pick(timedelta(days=3650)) is Resolution.MONTH


# --- sleep: stages per night ----------------------------------------------------------------


def test_sleep_is_stacked_stage_bars_per_night(env: Path, capsys: Any) -> None:
    out = env / "sleep.svg"
    code, said = plot_cmd(capsys, "sleep_analysis", "-o", str(out))
    assert code == 0, said
    nights = reads_of(env).sleep_nights()
    assert len(nights) >= 2  # the real aggregated nights and the 9.x segments
    stages = {stage for n in nights for stage, hours in n.stages.items() if hours}
    for stage, _ in plot.STAGES:
        bars = svg_marks(out, f"sleep-{stage}-")
        assert len(bars) == (len(nights) if stage in stages else 0), stage
    assert "stages per night" in svg_text(out) and "hours" in svg_text(out)
    drawn = plot.plot_nights(nights, env / "again.png")
    assert drawn.marks == len(nights)
    assert drawn.values == [n.asleep_h for n in nights]


def test_sleep_over_a_range_takes_the_nights_of_the_accounts_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """West of UTC too: --from/--to are days on the account's clock, and so are the
    nights' labels (a range read as UTC text would take the night after each)."""
    phone = phone_in(tmp_path, monkeypatch, "ny")

    def segment(start: str, end: str, stage: str, hours: float) -> dict[str, object]:
        return {"startDate": f"2026-03-{start} -0500", "endDate": f"2026-03-{end} -0500",
                "qty": hours, "value": stage, "source": "Watch"}  # fmt: skip

    phone.send(metrics_body(("sleep_analysis", "hr", [
        segment("02 23:00:00", "03 06:00:00", "Core", 7.0),  # the night of 03-03
        segment("03 23:30:00", "04 06:30:00", "Core", 7.0),  # of 03-04
        segment("04 23:00:00", "05 05:00:00", "Core", 6.0),  # of 03-05
    ])))  # fmt: skip
    phone.journal.close()
    assert cli.main(["fold"]) == 0
    assert cli.main(["account", "set-tz", "ny", "America/New_York"]) == 0
    capsys.readouterr()
    out = tmp_path / "nights.svg"
    code, said = plot_cmd(capsys, "sleep_analysis", "--from", "2026-03-03", "--to", "2026-03-05",
                          "-o", str(out))  # fmt: skip
    assert code == 0, said
    assert [round(bar_height(g)) > 0 for g in svg_marks(out, "sleep-core-")] == [True, True]
    assert "2026-03-03" in svg_text(out) and "2026-03-05" not in svg_text(out)


def test_bounds_at_the_calendars_ends_on_the_accounts_clock(env: Path, capsys: Any) -> None:
    """East of UTC, a UTC bound near year 9999's end is past the calendar on the phone's
    clock: the nights are read all the same; so is year 1's first day on the phone's
    clock. An instant before year 1 in UTC is a usage error naming the option, never a
    traceback."""
    assert cli.main(["account", "set-tz", "alice", "Asia/Tokyo"]) == 0
    capsys.readouterr()
    out = env / "edge.svg"
    code, said = plot_cmd(capsys, "sleep_analysis", "--to", "9999-12-31T23:00Z", "-o", str(out))
    assert code == 0, said
    assert svg_marks(out, "sleep-")
    code, said = plot_cmd(capsys, "sleep_analysis", "--from", "0001-01-01", "-o", str(out))
    assert code == 0 and svg_marks(out, "sleep-"), said
    code, said = plot_cmd(
        capsys, "sleep_analysis", "--from", "0001-01-01T00:00+14:00", "-o", str(out)
    )
    assert code == 2 and "Invalid value for '--from'" in said, said
    assert "outside the calendar" in said and "Traceback" not in said


def test_sleep_with_a_resolution_is_a_usage_error(env: Path, capsys: Any) -> None:
    code, said = plot_cmd(capsys, "sleep_analysis", "--resolution", "day", "-o", str(env / "s.png"))
    assert code == 2 and "--resolution" in said
    assert not (env / "s.png").exists()


# --- errors: a message, never a traceback ----------------------------------------------------


def test_unknown_metric_names_the_nearest(env: Path, capsys: Any) -> None:
    """A usage error (exit 2) naming the argument or option, as export's and coverage's."""
    code, said = plot_cmd(capsys, "heart_rat", "-o", str(env / "x.png"))
    assert code == 2
    assert "Invalid value for 'METRIC'" in said and "did you mean heart_rate" in said
    assert "Traceback" not in said
    code, said = plot_cmd(capsys, "heart_rate", "--field", "avj", "-o", str(env / "x.png"))
    assert code == 2 and "Invalid value for '--field'" in said and "avg" in said
    assert not (env / "x.png").exists()


def test_empty_range_is_a_clear_message(env: Path, capsys: Any) -> None:
    code, said = plot_cmd(capsys, "heart_rate", "--from", "2030-01-01", "-o", str(env / "x.svg"))
    assert code == 1
    assert "no heart_rate" in said and "2030-01-01" in said and "it has data from" in said
    code, said = plot_cmd(capsys, "sleep_analysis", "--from", "2030", "-o", str(env / "x.svg"))
    assert code == 1 and "no sleep_analysis data" in said
    assert not (env / "x.svg").exists()


@pytest.mark.parametrize(
    ("output", "why"),
    [("x.jpg", ".jpg: name a .png or .svg"), ("x", "no extension"), ("nope/x.png", "nope")],
)
def test_bad_output_is_a_usage_error_naming_the_option(
    env: Path, capsys: Any, output: str, why: str
) -> None:
    assert cli.main(["plot", "heart_rate", "-o", str(env / output)]) == 2
    err = capsys.readouterr().err
    assert "Invalid value for '-o' / '--output'" in err and why in err
    assert "Usage: healthlog plot" in err and "Traceback" not in err


def test_without_matplotlib_it_says_what_to_install(
    env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, said = plot_cmd(capsys, "heart_rate", "-o", str(env / "x.png"))
    assert code == 1 and "pip install 'healthlog[plot]'" in said


def test_the_resolutions_are_the_read_modules() -> None:
    assert [r.value for r in Resolution] == cli.PLOT_RESOLUTIONS


def test_the_account_is_chosen_or_the_only_one(env: Path, capsys: Any) -> None:
    out = env / "a.svg"
    assert plot_cmd(capsys, "step_count", "--account", "alice", "-o", str(out))[0] == 0
    code, said = plot_cmd(capsys, "step_count", "--account", "bob", "-o", str(out))
    assert code == 2 and "no account named 'bob'" in said
    journal = SqliteJournal(str(env / "journal.db"))
    journal.add_account("bob", tokens.hash_token(tokens.new_token()))
    journal.close()
    code, said = plot_cmd(capsys, "step_count", "-o", str(out))
    assert code == 2 and "--account NAME" in said
    code, said = plot_cmd(capsys, "step_count", "--account", "bob", "-o", str(env / "b.svg"))
    assert code == 2 and "no metric named 'step_count'" in said  # bob has no data


def test_a_dollar_or_backslash_in_posted_names_is_drawn_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Matplotlib reads $...$ as math text: a posted unit or name is drawn as written."""
    phone = phone_in(tmp_path, monkeypatch, "alice")
    unit, metric = "$x^2$ per \\frac", "tip_$jar"
    points = [{"date": f"2026-01-0{d} 08:00:00 +0000", "qty": d} for d in (1, 2, 3)]
    phone.send(metrics_body((metric, unit, points)))
    phone.journal.close()
    assert cli.main(["fold"]) == 0
    capsys.readouterr()
    out = tmp_path / "tips.svg"
    code, said = plot_cmd(capsys, metric, "-o", str(out))
    assert code == 0, said
    text = svg_text(out)
    assert unit in text and metric in text
