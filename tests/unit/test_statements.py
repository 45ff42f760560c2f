"""The named statements: each dialect's file has what the core runs, well formed."""

from __future__ import annotations

import pytest
from healthlog.errors import HealthlogError
from healthlog.journal import core
from healthlog.journal.statements import Statements, parse
from healthlog.model import Point

DIALECTS = {"sqlite": ":{}", "postgres": "%({})s"}


@pytest.mark.parametrize("backend", sorted(DIALECTS))
def test_each_dialect_has_every_statement_the_core_runs_each_described(backend: str) -> None:
    statements = Statements.load(backend, param=DIALECTS[backend], required=core.STATEMENTS)

    assert set(core.STATEMENTS) <= set(statements)
    for name in statements:
        statement = statements.statement(name)
        assert statement.description, name
        assert not statement.description.startswith("--"), name
        assert statement.text.strip(), name


def test_both_dialects_give_the_core_the_same_slots() -> None:
    """The core fills slots by name: a slot one dialect lacks would drop a filter there."""
    sqlite = Statements.load("sqlite", param=":{}")
    postgres = Statements.load("postgres", param="%({})s")

    for name in core.STATEMENTS:
        assert sqlite.statement(name).slots == postgres.statement(name).slots, name


def test_a_slot_is_filled_with_the_fragment_and_is_only_a_comment_when_not() -> None:
    (statement,) = parse("t", "-- q --\n-- A query.\nSELECT x FROM t WHERE true /*and*/\n")
    statements = Statements("t", [statement], ":{}")

    assert statements.render("q") == "SELECT x FROM t WHERE true /*and*/"
    assert statements.render("q", **{"and": " AND a = :a"}) == (
        "SELECT x FROM t WHERE true  AND a = :a"
    )
    with pytest.raises(ValueError, match="no slot order"):
        statements.render("q", order="DESC")
    assert statements.param("a") == ":a"


def test_comment_lines_inside_a_statement_are_part_of_it() -> None:
    text = (
        "-- preamble\n\n-- a --\n-- First.\n-- more words\nSELECT 1\n"
        "\n-- b --\n-- Second.\nSELECT 2\n"
    )

    a, b = parse("t", text)

    assert (a.name, a.description, a.text) == ("a", "First.", "-- more words\nSELECT 1")
    assert (b.name, b.description, b.text) == ("b", "Second.", "SELECT 2")


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("-- a --\nSELECT 1\n", "no one-line description"),
        ("-- a --\n-- b --\n-- B.\nSELECT 1\n", "no one-line description"),
        ("-- a --\n-- A.\n\n-- b --\n-- B.\nSELECT 2\n", "a has no statement"),
        ("-- a --\n-- A.\nSELECT 1\n-- a --\n-- A again.\nSELECT 2\n", "names 'a' twice"),
    ],
)
def test_a_malformed_file_is_refused_with_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(HealthlogError, match=complaint):
        Statements("t", parse("t", text), ":{}")


def test_a_file_without_a_statement_the_core_runs_is_refused() -> None:
    with pytest.raises(HealthlogError, match="lacks the statements no_such_statement"):
        Statements.load("sqlite", param=":{}", required=("pending_page", "no_such_statement"))


def test_the_days_a_delivery_touches_merge_into_runs_per_metric() -> None:
    """Where the fold counts a delivery's points: its UTC days, consecutive ones merged."""
    points = [
        Point("m", "qty", "s", f"2026-01-{day:02}T{hour:02}:00:00.000000Z", 0, None, 1.0, None, "u")
        for day, hour in ((3, 1), (1, 5), (2, 23), (2, 0), (9, 12), (31, 0))
    ] + [Point("n", "qty", "s", "2025-12-31T23:59:59.999999Z", 0, None, 1.0, None, "u")]
    # half-open, [a run's first midnight, the midnight after its last day), as the tally
    # reads them (start >= low AND start < high): the last microsecond of a day is in
    assert core.touched_days(points) == {
        "m": [
            ("2026-01-01T00:00:00.000000Z", "2026-01-04T00:00:00.000000Z"),
            ("2026-01-09T00:00:00.000000Z", "2026-01-10T00:00:00.000000Z"),
            ("2026-01-31T00:00:00.000000Z", "2026-02-01T00:00:00.000000Z"),
        ],
        "n": [("2025-12-31T00:00:00.000000Z", "2026-01-01T00:00:00.000000Z")],
    }
    assert core.touched_days([]) == {}
