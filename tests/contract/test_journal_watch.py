"""The watch's notices (``Journal.watch_notices``): what each target was told, on both
backends, added or ended by one evaluator only. A restart's view of them is
tests/integration/test_watch_notify.py's."""

from __future__ import annotations

from datetime import timedelta

from healthlog.journal.port import Journal, WatchNotice

from tests.contract.conftest import T0


def notice(target: str = "t1", key: str = "no_delivery:a", at_s: float = 0.0) -> WatchNotice:
    return WatchNotice(target, key, "healthlog no_delivery alice", T0 + timedelta(seconds=at_s))


def test_a_notice_is_added_once_listed_in_order_and_ended_once(journal: Journal) -> None:
    assert journal.watch_notices() == []
    assert journal.add_watch_notice(notice("t2", "backlog", 1.5))
    assert journal.add_watch_notice(notice("t1", "no_delivery:a"))
    assert journal.add_watch_notice(notice("t1", "failed:a:deadline", 0.000001))
    assert not journal.add_watch_notice(notice("t1", "no_delivery:a", 60))  # already told
    assert journal.watch_notices() == [
        notice("t1", "failed:a:deadline", 0.000001),
        notice("t1", "no_delivery:a"),
        notice("t2", "backlog", 1.5),
    ]
    assert journal.delete_watch_notice("t1", "no_delivery:a")
    assert not journal.delete_watch_notice("t1", "no_delivery:a")  # ended already
    assert not journal.delete_watch_notice("t3", "backlog")
    assert [(n.target, n.rule_key) for n in journal.watch_notices()] == [
        ("t1", "failed:a:deadline"),
        ("t2", "backlog"),
    ]


def test_a_key_of_any_text_and_length_round_trips(journal: Journal) -> None:
    key = "silent_metric:a:" + "ü" * 300 + " metric/with:colons"
    assert journal.add_watch_notice(notice("t" * 64, key))
    assert journal.watch_notices() == [notice("t" * 64, key)]


def test_a_rotated_token_is_kept_retired_and_its_refusals_counted(journal: Journal) -> None:
    """``set_token_hash`` keeps the hash it replaces; a refusal of it is counted for its
    account, a stranger's token is not (both backends)."""
    account = journal.add_account("alice", "old-hash")
    assert journal.stale_tokens(account.id) == []
    journal.set_token_hash(account.id, "new-hash")
    assert not journal.note_refused_token("a-stranger", T0)  # no account's: not counted
    assert not journal.note_refused_token("new-hash", T0)  # the current one is no retired
    assert journal.stale_tokens(account.id) == []  # retired, not refused yet
    assert journal.note_refused_token("old-hash", T0)
    assert journal.note_refused_token("old-hash", T0 + timedelta(minutes=5))
    (stale,) = journal.stale_tokens(account.id)
    assert (stale.refused, stale.first_refused_at, stale.last_refused_at) == (
        2,
        T0,
        T0 + timedelta(minutes=5),
    )
    journal.set_token_hash(account.id, "newer-hash")  # the second rotation retires "new"
    assert journal.note_refused_token("new-hash", T0 + timedelta(minutes=6))
    assert [t.refused for t in journal.stale_tokens(account.id)] == [1, 2]  # latest first
    bob = journal.add_account("bob", "bob-hash")
    assert journal.stale_tokens(bob.id) == []


def test_a_notice_moves_on_only_from_where_its_evaluator_saw_it(journal: Journal) -> None:
    """The claim's compare-and-set: of two evaluators that read one notice, one moves it."""
    claimed = notice(at_s=0)._replace(state="telling")
    assert journal.add_watch_notice(claimed)
    assert journal.watch_notices() == [claimed]
    later = T0 + timedelta(minutes=10)
    assert journal.move_watch_notice(claimed, state="telling", at=later)  # taken up again
    assert not journal.move_watch_notice(claimed, state="told", at=later)  # read before
    (now,) = journal.watch_notices()
    assert (now.state, now.told_at) == ("telling", later)
    assert journal.move_watch_notice(now, state="told", at=later)
    assert [n.state for n in journal.watch_notices()] == ["told"]
