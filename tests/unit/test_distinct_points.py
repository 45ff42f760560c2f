"""``model.distinct_points``: every distinct sample of a delivery keyed apart, once.

The fold calls it on every body it parses and on every step of an import; the contract
tests (tests/contract/test_journal_samples.py) fold real bodies through it on both
backends. Here: the rule itself, on points built by hand.
"""

from __future__ import annotations

import random

from healthlog.hae.parse import parse
from healthlog.model import Point, distinct_points
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SAMPLES

START = "2026-03-01T11:30:00.000000Z"


def food(qty: float | None, extra: str | None = None, *, end: str | None = None) -> Point:
    return Point("dietary_energy", "qty", "Food Log", START, 60, end, qty, None, "kcal", extra)


def test_points_without_a_shared_key_come_back_as_they_were() -> None:
    points = [food(1.0)._replace(start=f"2026-03-01T1{n}:00:00.000000Z") for n in range(5)]
    assert distinct_points(points) == (points, 0)


def test_samples_sharing_a_key_get_seqs_by_their_contents_and_keep_their_order() -> None:
    points = [food(300.0), food(100.0), food(100.0, '{"name":"tea"}'), food(None)]
    kept, repeated = distinct_points(points)
    assert repeated == 0
    # order as given; seq by content: no value first, then by value, then by extra
    assert [(p.qty, p.seq) for p in kept] == [(300.0, 3), (100.0, 1), (100.0, 2), (None, 0)]


def test_an_exact_repeat_is_held_once_and_counted() -> None:
    points = [food(5.0), food(7.0), food(5.0), food(5.0, end="2026-03-01T11:31:00.000000Z")]
    kept, repeated = distinct_points(points)
    assert repeated == 1
    # by content: no end before an end, then by value
    assert [(p.qty, p.end, p.seq) for p in kept] == [
        (5.0, None, 0),
        (7.0, None, 1),
        (5.0, "2026-03-01T11:31:00.000000Z", 2),
    ]


def test_each_field_and_source_is_a_key_of_its_own() -> None:
    points = [food(1.0), food(1.0)._replace(field="other"), food(1.0)._replace(source="Phone")]
    assert distinct_points(points) == (points, 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, 1.0, 2.5, 33.0]), st.sampled_from([None, '{"a":1}'])),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_the_same_samples_in_any_order_get_the_same_keys(
    contents: list[tuple[float | None, str | None]], shuffle: random.Random
) -> None:
    """So a later delivery that re-sends the window in another order meets the same
    keys, and replaces each sample's row with its own."""
    points = [food(qty, extra) for qty, extra in contents]
    shuffled = list(points)
    shuffle.shuffle(shuffled)
    one, repeats_one = distinct_points(points)
    two, repeats_two = distinct_points(shuffled)
    assert sorted(one, key=repr) == sorted(two, key=repr)
    assert repeats_one == repeats_two == len(points) - len(set(points))
    assert len({(p.start, p.seq) for p in one}) == len(one)


def test_every_point_the_parser_builds_carries_its_seq() -> None:
    """The parsers build Points as bare tuples on their hot paths: each must have every
    field, ``seq`` included (a short tuple would fail only when a key is shared)."""
    for sample in SAMPLES.glob("*.json"):
        result = parse(sample.read_bytes())
        assert all(len(p) == len(Point._fields) for p in result.points), sample.name
