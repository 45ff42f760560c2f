"""The error classes: one per refusal, all under the one root."""

from __future__ import annotations

import itertools

import pytest
from healthlog import errors
from healthlog.errors import (
    AccountError,
    AccountIdTaken,
    AccountNameTaken,
    AccountNotFound,
    Circumstance,
    HealthlogError,
    TokenTaken,
)

ACCOUNT_LEAVES = (AccountNameTaken, TokenTaken, AccountIdTaken, AccountNotFound)


def test_the_account_refusals_are_distinct_leaves_under_healthlog_error() -> None:
    for leaf in ACCOUNT_LEAVES:
        assert issubclass(leaf, AccountError) and issubclass(leaf, HealthlogError)
        # a refused account change is the request's fault, not a circumstance to retry
        assert not issubclass(leaf, Circumstance)
    for one, other in itertools.permutations(ACCOUNT_LEAVES, 2):
        assert not issubclass(one, other)
        try:
            raise one()
        except other:
            pytest.fail(f"except {other.__name__} caught {one.__name__}")
        except one:
            pass


def test_each_account_refusal_has_its_own_default_message() -> None:
    messages = [str(leaf()) for leaf in ACCOUNT_LEAVES]
    assert all(messages) and len(set(messages)) == len(messages)
    assert str(AccountNameTaken("an account named 'bob' exists")) == (
        "an account named 'bob' exists"
    )


def test_every_error_class_is_under_healthlog_error() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, BaseException)
    ]
    assert set(ACCOUNT_LEAVES) <= set(classes)
    assert all(issubclass(cls, HealthlogError) for cls in classes)


def test_the_parser_has_one_not_understood_and_it_is_a_value_error() -> None:
    from healthlog.hae import errors as hae_errors
    from healthlog.hae import metrics, records, sections

    one = hae_errors.NotUnderstood
    assert metrics.NotUnderstood is one and records.NotUnderstood is one
    assert sections.NotUnderstood is one
    # the section loops catch ValueError, which also covers a time dates cannot read
    assert issubclass(one, ValueError) and not issubclass(one, HealthlogError)
