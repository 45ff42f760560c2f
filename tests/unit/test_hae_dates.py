"""HAE timestamps (docs/hae-format.md, "Dates") to fixed-width UTC text plus the phone's offset."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from healthlog.hae import dates
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("sent", "utc", "offset"),
    [
        ("2021-12-24 00:04:00 +0800", "2021-12-23T16:04:00.000000Z", 480),
        ("2023-06-06 20:38:38 -0500", "2023-06-07T01:38:38.000000Z", -300),
        ("2021-03-14 00:01:00 +0000", "2021-03-14T00:01:00.000000Z", 0),
        ("2024-06-01 10:30:00 +0530", "2024-06-01T05:00:00.000000Z", 330),
        ("2024-06-01 23:45:00 -0930", "2024-06-02T09:15:00.000000Z", -570),
    ],
)
def test_canonical_24_hour_time_becomes_utc_and_keeps_the_offset(
    sent: str, utc: str, offset: int
) -> None:
    assert dates.instant(sent) == (utc, offset)


@pytest.mark.parametrize(
    ("sent", "utc"),
    [
        # midnight local crosses back over a month and a year end
        ("2021-01-01 02:00:00 +0800", "2020-12-31T18:00:00.000000Z"),
        # late evening west of Greenwich crosses forward into a leap day
        ("2024-02-28 22:00:00 -0300", "2024-02-29T01:00:00.000000Z"),
        ("2024-02-29 23:59:59 -0000", "2024-02-29T23:59:59.000000Z"),
        ("2023-02-28 23:00:00 -0200", "2023-03-01T01:00:00.000000Z"),
    ],
)
def test_offsets_that_cross_a_day_boundary_move_the_date(sent: str, utc: str) -> None:
    assert dates.instant(sent)[0] == utc


@pytest.mark.parametrize(
    ("sent", "utc", "offset"),
    [
        ("2024-09-21 7:57:00 am +1000", "2024-09-20T21:57:00.000000Z", 600),
        ("2024-09-21 7:57:00\u202fam +1000", "2024-09-20T21:57:00.000000Z", 600),
        ("2024-09-21 7:57:00 PM +1000", "2024-09-21T09:57:00.000000Z", 600),
        ("2024-09-21 7:57:00\u202fPM +1000", "2024-09-21T09:57:00.000000Z", 600),
        ("2024-09-21 12:00:00 AM +1000", "2024-09-20T14:00:00.000000Z", 600),
        ("2024-09-21 12:00:00 pm +1000", "2024-09-21T02:00:00.000000Z", 600),
        ("2024-09-21 07:57:00 am -0500", "2024-09-21T12:57:00.000000Z", -300),
    ],
)
def test_twelve_hour_times_with_either_space_before_am_pm(sent: str, utc: str, offset: int) -> None:
    assert dates.instant(sent) == (utc, offset)


def test_a_date_alone_is_midnight_utc_without_an_offset() -> None:
    assert dates.instant("2021-12-18") == ("2021-12-18T00:00:00.000000Z", None)


@pytest.mark.parametrize(
    ("sent", "utc", "offset"),
    [
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000000Z", 0),
        ("2024-01-02T03:04:05+01:00", "2024-01-02T02:04:05.000000Z", 60),
        ("2024-01-02T03:04:05.25-05:00", "2024-01-02T08:04:05.250000Z", -300),
        ("2024-01-02T00:30:00+02:00", "2024-01-01T22:30:00.000000Z", 120),
        # no zone at all (as in the CSV export): read as UTC, and no offset is invented
        ("2024-01-02T03:04:05", "2024-01-02T03:04:05.000000Z", None),
        ("2023-01-02 00:00:00", "2023-01-02T00:00:00.000000Z", None),
    ],
)
def test_iso_8601_times(sent: str, utc: str, offset: int | None) -> None:
    assert dates.instant(sent) == (utc, offset)


@pytest.mark.parametrize(
    ("sent", "utc"),
    [
        (1717207960, "2024-06-01T02:12:40.000000Z"),
        (1717207960.125, "2024-06-01T02:12:40.125000Z"),
        (0, "1970-01-01T00:00:00.000000Z"),
    ],
)
def test_epoch_seconds_have_no_offset(sent: float, utc: str) -> None:
    assert dates.instant(sent) == (utc, None)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "yesterday",
        "2021-02-29 10:00:00 +0000",  # not a leap year
        "2021-12-24 24:00:00 +0000",
        "2021-12-24 00:60:00 +0000",
        "2021-12-24 00:00:61 +0000",
        "2021-12-24 00:04:00 +0860",  # 60 offset minutes
        "2021-12-24 00:04:00 +2400",
        "2021-12-24 00:04:00 08000",
        "2021-12-24 00:04:00 +08:0",
        "2021-W51-5 00:04:00 +0800",  # an ISO week date in the canonical slot
        "２０２１-12-24 00:04:00 +0800",  # full-width digits
        "2024-09-21 13:57:00 pm +1000",
        "2024-09-21 0:57:00 am +1000",
        "2021-12-32",
        "0001-01-01 00:00:00 +0100",  # before the first representable instant
        "9999-12-31 23:00:00 -0200",  # after the last one
        True,
        None,
        [],
        {"date": "2021-12-24"},
        float("nan"),
        float("inf"),
        1e20,
    ],
)
def test_what_is_not_a_time_raises_value_error(garbage: object) -> None:
    with pytest.raises(ValueError):
        dates.instant(garbage)


def test_the_error_never_quotes_the_value() -> None:
    with pytest.raises(ValueError) as caught:
        dates.instant("2021-12-24 00:04:00 secret")
    assert "secret" not in str(caught.value)


aware = st.builds(
    lambda moment, minutes: moment.replace(tzinfo=timezone(timedelta(minutes=minutes))),
    st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2200, 1, 1)),
    st.integers(-23 * 60 - 59, 23 * 60 + 59),
)


def _canonical(moment: datetime) -> str:
    minutes = int(moment.utcoffset().total_seconds()) // 60  # type: ignore[union-attr]
    sign = "-" if minutes < 0 else "+"
    return (
        moment.strftime("%Y-%m-%d %H:%M:%S ")
        + f"{sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"
    )


@given(aware)
def test_canonical_form_agrees_with_datetime(moment: datetime) -> None:
    moment = moment.replace(microsecond=0)
    expected = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    minutes = int(moment.utcoffset().total_seconds()) // 60  # type: ignore[union-attr]
    assert dates.instant(_canonical(moment)) == (expected, minutes)


@given(aware, aware)
def test_text_order_is_time_order(a: datetime, b: datetime) -> None:
    a, b = a.replace(microsecond=0), b.replace(microsecond=0)
    text_a, text_b = dates.instant(_canonical(a))[0], dates.instant(_canonical(b))[0]
    assert len(text_a) == len(text_b) == 27
    assert (text_a < text_b) == (a < b)
    assert (text_a == text_b) == (a == b)


@given(aware)
def test_twelve_hour_form_reads_as_the_24_hour_form(moment: datetime) -> None:
    moment = moment.replace(microsecond=0)
    canonical = _canonical(moment)
    hour12 = (moment.hour + 11) % 12 + 1
    meridiem = "pm" if moment.hour >= 12 else "am"
    twelve = f"{canonical[:11]}{hour12}{canonical[13:19]}\u202f{meridiem.upper()}{canonical[19:]}"
    assert dates.instant(twelve) == dates.instant(canonical)


# --- Instants: the per-body memo reads every value as instant does -------------------------


def _outcome(read: object, value: object) -> tuple[str, int | None] | str:
    try:
        return read(value)  # type: ignore[operator, no-any-return]
    except ValueError as exc:
        return f"ValueError: {exc}"


# texts of the same minute and of the next ones, the seconds and the offset varied, with
# every edge the canonical reader checks: seconds 60 and "5x", a bad offset, a bad day,
# the 12-hour and ISO forms of the same moment, non-texts that equal each other as keys
seconds = st.sampled_from(["00", "01", "30", "59", "60", "99", "5x", "0", " 1"])
offsets = st.sampled_from(["+0100", "-0530", "+0000", "-1200", "+1400", "+0160", "+01:0", "0100"])
days = st.sampled_from(["2024-06-01", "2024-02-29", "2023-02-29", "0001-01-01", "9999-12-31"])
clocks = st.sampled_from(["00:00", "00:01", "23:59", "12:30", "24:00", "7:57"])
near_canonical = st.builds(lambda d, c, s, o: f"{d} {c}:{s} {o}", days, clocks, seconds, offsets)
time_values = (
    near_canonical
    | st.sampled_from(
        [
            "2024-06-01 7:57:00 am +0100",
            "2024-06-01T00:01:30+01:00",
            "2024-06-01",
            "2024-06-01 00:01:30",
            "",
            "2024-06-01 00:01:30\u202f+0100",
        ]
    )
    | st.sampled_from([1, 1.0, True, 0, False, 1717207960.5, None])
)


@given(st.lists(time_values, max_size=40))
def test_the_memo_reads_every_value_as_instant_does(values: list[object]) -> None:
    instants = dates.Instants()
    for value in values + values:  # each once more: from the memo, or refused again
        assert _outcome(instants.read, value) == _outcome(dates.instant, value)
        if isinstance(value, str) and value in instants:
            assert instants[value] == dates.instant(value)


def test_a_minute_of_second_level_texts_reads_as_instant_and_keeps_one_text() -> None:
    texts = [f"2024-06-01 00:{m:02d}:{s:02d} +0100" for m in (59, 0, 1) for s in range(60)]
    texts = [f"2024-05-31 23:59:{s:02d} -0030" for s in range(60)] + texts
    instants = dates.Instants()
    assert [instants.read(t) for t in texts] == [dates.instant(t) for t in texts]
    assert len(instants) == 4  # the first text of each minute


def test_the_memo_starts_over_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dates.Instants, "LIMIT", 3)
    instants = dates.Instants()
    texts = [f"2024-06-01 0{h}:00:00 +0100" for h in range(8)]
    assert [instants.read(t) for t in texts] == [dates.instant(t) for t in texts]
    assert 1 <= len(instants) <= 3
