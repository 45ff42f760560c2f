"""What only the PostgreSQL adapter does: its plans, migrations, locks, errors and times.

Every test runs against the machine's server in a database of its own (``tests.pg``);
without a server they skip with the reason, or fail when HEALTHLOG_REQUIRE_POSTGRES=1.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from healthlog import ids
from healthlog.config import Settings
from healthlog.errors import (
    Circumstance,
    HealthlogError,
    JournalBusy,
    JournalUnavailable,
)
from healthlog.journal import core, migrate
from healthlog.journal.port import ZERO_CURSOR, Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.rows import first_at_or_after, to_text
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local.launcher import free_port
from healthlog.model import Account, Cursor, Item, NewDelivery, ParseStatus, Point, Record
from healthlog.ops import wiring
from hypothesis import given
from hypothesis import strategies as st

from tests import pg
from tests.pg import pg_url

__all__ = ["pg_url"]  # the fixture, imported for this module's tests

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def journal(pg_url: str) -> Iterator[PostgresJournal]:
    j = PostgresJournal(pg_url)
    j.migrate()
    yield j
    j.close()


@pytest.fixture
def account(journal: PostgresJournal) -> Account:
    return journal.add_account("alice", "hash-a")


def new_delivery(account: Account, at: datetime = T0) -> NewDelivery:
    return NewDelivery(
        id=ids.new_delivery_id(at),
        account_id=account.id,
        received_at=at,
        archive_key="k",
        size=2,
        content_type="application/json",
    )


def a_point(qty: float, start: str = "2026-01-01T00:00:00.000000Z", source: str = "W") -> Point:
    return Point("step_count", "qty", source, start, 0, None, qty, None, "count")


def write(journal: Journal, delivery_id: str, points: list[Point]) -> None:
    journal.write_outcome(
        delivery_id,
        expected=ParseStatus.PENDING,
        status=ParseStatus.PARSED,
        uncovered=(),
        failure=None,
        points=points,
    )


def raw(url: str) -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit connection beside the journal's."""
    return psycopg.connect(url, autocommit=True)


# --- query plans -----------------------------------------------------------------------------


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
def test_pending_page_reads_the_partial_index_among_many_folded_rows(
    pg_url: str, journal: PostgresJournal, account: Account, plan_cache_mode: str
) -> None:
    """Also as a prepared statement's generic plan: the literal 'pending' proves it."""
    with raw(pg_url) as conn:
        conn.execute(
            "INSERT INTO deliveries (id, account_id, received_at, archive_key, size,"
            " content_type, status)"
            " SELECT 'f' || lpad(n::text, 6, '0'), %s, %s + n * interval '1 second', 'k', 1,"
            " 'application/json', 'parsed' FROM generate_series(1, 20000) AS n",
            (account.id, T0),
        )
        for n in range(5):
            journal.insert_delivery(new_delivery(account, T0 + timedelta(days=1, seconds=n)))
        conn.execute("ANALYZE deliveries")
        conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
        sql = journal.driver.statements
        cursor = {"received_at": to_text(ZERO_CURSOR.received_at), "id": "", "limit": 100}
        rows = conn.execute("EXPLAIN " + sql["pending_page"], cursor).fetchall()
        found = "\n".join(str(row[0]) for row in rows)
        counted = "\n".join(
            str(row[0]) for row in conn.execute("EXPLAIN " + sql["count_pending"]).fetchall()
        )

    assert "deliveries_pending" in found, found
    assert "Seq Scan" not in found, found
    assert "Sort" not in found, found  # the index gives the order
    assert "deliveries_pending" in counted, counted
    assert [c.received_at.day for c in journal.pending_page(ZERO_CURSOR, 100)] == [2] * 5


def test_one_metric_in_a_range_of_starts_is_a_range_of_the_points_key(
    pg_url: str, journal: PostgresJournal, account: Account
) -> None:
    """The day counts and the plots read points through the view: one metric's range."""
    delivery = new_delivery(account)
    journal.insert_delivery(delivery)
    points = [
        Point(
            f"m{k}",
            field,
            source,
            f"2026-01-{1 + n // 1440:02}T{n // 60 % 24:02}:{n % 60:02}:00.000000Z",
            0,
            None,
            1.0,
            None,
            "count",
        )
        for k in range(8)
        for field in ("min", "avg", "max")
        for source in ("Watch", "Phone")
        for n in range(0, 4320, 3)
    ]
    journal.write_outcome(
        delivery.id, expected=ParseStatus.PENDING, status=ParseStatus.PARSED, uncovered=(),
        failure=None, points=points,
    )  # fmt: skip
    sql = journal.driver.statements
    params = {"account_id": account.id, "metric": "m3", "field": "avg", "bar": "2026-01-02",
              "low": "2026-01-02", "high": "2026-01-03"}  # fmt: skip
    with raw(pg_url) as conn:
        conn.execute("ANALYZE")
        found = {
            name: "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + query, params))
            for name, query in (
                ("day_tally", sql.render("day_tally", day=sql["bucket_day"])),
                ("buckets", sql.render("point_buckets", bucket=sql["bucket_hour"], **{"and": ""})),
            )
        }
    for name, plan in found.items():
        assert "point_rows_pkey" in plan, (name, plan)
        assert "Seq Scan on point_rows" not in plan, (name, plan)


# --- migrations ------------------------------------------------------------------------------


def schema(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Tables, columns, indexes and constraints of the public schema, comparable."""
    with raw(url) as conn:
        return {
            "columns": conn.execute(
                "SELECT table_name, ordinal_position, column_name, data_type, udt_name,"
                " is_nullable, column_default, collation_name"
                " FROM information_schema.columns WHERE table_schema = 'public'"
                " ORDER BY table_name, ordinal_position"
            ).fetchall(),
            "indexes": conn.execute(
                "SELECT tablename, indexname, indexdef FROM pg_indexes"
                " WHERE schemaname = 'public' ORDER BY tablename, indexname"
            ).fetchall(),
            "constraints": conn.execute(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)"
                " FROM pg_constraint WHERE connamespace = 'public'::regnamespace"
                " ORDER BY 1, 2"
            ).fetchall(),
        }


def test_a_database_migrated_step_by_step_equals_a_fresh_one() -> None:
    head = migrate.head(migrate.load("postgres"))
    assert head >= 3
    with pg.fresh_database() as fresh, pg.fresh_database() as stepped:
        one = PostgresJournal(fresh)
        one.migrate()
        one.close()
        for version in range(1, head + 1):  # each step by a journal of its own
            step = PostgresJournal(stepped)
            step.migrate(target=version)
            step.close()
            if version == 2:
                assert "deliveries_pending" not in {i[1] for i in schema(stepped)["indexes"]}

        assert schema(stepped) == schema(fresh)
        assert {i[1] for i in schema(fresh)["indexes"]} >= {
            "deliveries_pending",
            "deliveries_status",
            "deliveries_order",
            "deliveries_account",
            "point_rows_pkey",
            "series_pkey",
        }
        with raw(stepped) as conn:
            versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
        assert versions == list(range(1, head + 1))


def test_migration_0007_counts_the_points_folded_before_it_per_local_day() -> None:
    """As on SQLite: on the phone's day, and none judged late."""
    with pg.fresh_database() as url:
        journal = PostgresJournal(url)
        journal.migrate(target=6)
        with raw(url) as conn:
            for start, offset in (
                ("2026-01-01T23:30:00Z", 60),
                ("2026-01-02T10:00:00Z", None),
                ("2026-01-03T00:30:00Z", -60),
            ):
                conn.execute(
                    "INSERT INTO points (account_id, metric, field, source, start, utc_offset,"
                    " unit, layer_received_at, layer_id)"
                    " VALUES ('a', 'm', 'qty', 's', %s, %s, 'u', now(), 'd1')",
                    (start, offset),
                )
        journal.migrate()
        assert journal.metric_days(account_id="a") == [("m", "2026-01-02", 3)]
        assert journal.late_points(account_id="a") == []
        journal.close()


def test_migrations_are_numbered_like_the_sqlite_ones() -> None:
    assert [(m.version, m.name) for m in migrate.load("postgres")] == [
        (m.version, m.name) for m in migrate.load("sqlite")
    ]


def test_processes_migrating_at_once_apply_each_migration_once(pg_url: str) -> None:
    journals = [PostgresJournal(pg_url) for _ in range(4)]
    start = threading.Barrier(len(journals))
    failures: list[BaseException] = []

    def run(journal: PostgresJournal) -> None:
        try:
            start.wait()
            journal.migrate()
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(j,)) for j in journals]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for j in journals:
        j.close()

    assert failures == []
    with raw(pg_url) as conn:
        versions = [int(str(v)) for (v,) in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(versions) == [m.version for m in migrate.load("postgres")]


def test_an_unmigrated_database_raises_journal_unavailable(pg_url: str) -> None:
    journal = PostgresJournal(pg_url)

    with pytest.raises(JournalUnavailable, match="not migrated"):
        journal.pending_page(ZERO_CURSOR, 1)
    with pytest.raises(JournalUnavailable):
        list(journal.export_points())
    journal.close()


# --- busy ------------------------------------------------------------------------------------


@pytest.fixture
def impatient(pg_url: str, journal: PostgresJournal) -> Iterator[PostgresJournal]:
    """A second journal on the same database that waits 50 ms for a lock, twice more."""
    j = PostgresJournal(pg_url, lock_timeout_ms=50, retries=2)
    yield j
    j.close()


def test_a_locked_delivery_row_makes_write_outcome_raise_journal_busy_and_write_nothing(
    pg_url: str, journal: PostgresJournal, impatient: PostgresJournal, account: Account
) -> None:
    new = new_delivery(account)
    journal.insert_delivery(new)

    with raw(pg_url) as locker:
        locker.execute("BEGIN")
        locker.execute("SELECT 1 FROM deliveries WHERE id = %s FOR UPDATE", (new.id,))
        started = time.monotonic()
        with pytest.raises(JournalBusy) as raised:
            write(impatient, new.id, [a_point(3.0)])
        assert time.monotonic() - started < 3
        assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable)
        # readers are not blocked by the row lock
        stored = impatient.get_delivery(new.id)
        assert stored is not None and stored.status is ParseStatus.PENDING
        assert impatient.summary().points == 0
        locker.execute("ROLLBACK")

    write(impatient, new.id, [a_point(3.0)])
    stored = impatient.get_delivery(new.id)
    assert stored is not None and stored.status is ParseStatus.PARSED
    assert impatient.summary().points == 1


def test_a_locked_table_makes_insert_raise_journal_busy_with_bounded_backoff(
    pg_url: str,
    impatient: PostgresJournal,
    account: Account,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(core, "_sleep", pauses.append)
    new = new_delivery(account)

    with raw(pg_url) as locker:
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE deliveries IN EXCLUSIVE MODE")
        with pytest.raises(JournalBusy):
            impatient.insert_delivery(new)
        locker.execute("ROLLBACK")

    assert len(pauses) == 2 and all(0 < p <= 0.2 for p in pauses)
    assert impatient.insert_delivery(new) is True


def test_a_lock_released_between_retries_lets_the_write_land(
    pg_url: str, impatient: PostgresJournal, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry restarts the transaction: no JournalBusy when the lock goes in time."""
    with raw(pg_url) as locker:
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE deliveries IN EXCLUSIVE MODE")
        pauses: list[float] = []

        def release_instead_of_sleeping(seconds: float) -> None:
            pauses.append(seconds)
            locker.execute("ROLLBACK")

        monkeypatch.setattr(core, "_sleep", release_instead_of_sleeping)

        assert impatient.insert_delivery(new_delivery(account)) is True
    assert len(pauses) == 1


def test_a_journal_whose_connections_are_all_in_use_raises_journal_busy(
    pg_url: str, journal: PostgresJournal, account: Account
) -> None:
    small = PostgresJournal(pg_url, lock_timeout_ms=50, pool_size=1)
    new = new_delivery(account)
    journal.insert_delivery(new)
    write(journal, new.id, [a_point(1.0), a_point(2.0, "2026-01-01T01:00:00.000000Z")])
    rows = small.export_points()
    next(rows)  # the export holds the one connection

    with pytest.raises(JournalBusy):
        small.count_pending()
    rows.close()
    assert small.count_pending() == 0
    small.close()


# --- the fold lock ---------------------------------------------------------------------------


def test_the_fold_lock_is_released_when_its_holders_session_dies(
    pg_url: str, journal: PostgresJournal
) -> None:
    with journal.fold_lock() as held:
        assert held
        with raw(pg_url) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks"
                " WHERE locktype = 'advisory' AND granted AND database ="
                " (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        with journal.fold_lock(wait_s=5) as other:
            assert other is True


def test_waiting_for_the_fold_lock_gives_up_after_wait_s(journal: PostgresJournal) -> None:
    with journal.fold_lock() as held:
        assert held
        started = time.monotonic()
        with journal.fold_lock(wait_s=0.2) as other:
            assert other is False
        assert 0.15 < time.monotonic() - started < 2


# --- connections and errors ------------------------------------------------------------------


def test_a_server_that_cannot_be_reached_raises_journal_unavailable_quickly() -> None:
    port = free_port()  # free a moment ago: nothing listens there now
    journal = PostgresJournal(f"postgresql://postgres@127.0.0.1:{port}/healthlog")

    started = time.monotonic()
    for call in (journal.migrate, journal.count_pending, lambda: journal.fold_lock().__enter__()):
        with pytest.raises(JournalUnavailable) as raised:
            call()
        assert not isinstance(raised.value, psycopg.Error)
        assert "Connection refused" in str(raised.value)
    assert time.monotonic() - started < 2
    journal.close()


def test_connections_the_server_dropped_while_idle_are_replaced(
    pg_url: str, journal: PostgresJournal, account: Account
) -> None:
    """A restart or a failover between two calls costs nothing but a reconnect."""
    journal.insert_delivery(new_delivery(account))
    with raw(pg_url) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )

    assert journal.count_pending() == 1


def test_a_closed_journal_raises_journal_unavailable(journal: PostgresJournal) -> None:
    journal.close()

    with pytest.raises(JournalUnavailable):
        journal.count_pending()


@pytest.mark.parametrize(
    "bad",
    [
        a_point(1.0, source="nul\x00byte"),  # PostgreSQL text cannot hold NUL
        Point("m", "qty", "s", "not a time", None, None, 1.0, None, "u"),
        Point("m", "qty", "s", "2026-01-01T00:00:00.000000Z", None, None, object(), None, "u"),  # type: ignore[arg-type]
    ],
    ids=["nul", "time", "object"],
)
def test_a_point_the_database_cannot_store_is_not_a_circumstance(
    journal: PostgresJournal, account: Account, bad: Point
) -> None:
    """A bad value is the delivery's fault: a plain HealthlogError, and nothing written."""
    new = new_delivery(account)
    journal.insert_delivery(new)

    with pytest.raises(HealthlogError) as raised:
        write(journal, new.id, [a_point(1.0), bad])
    assert not isinstance(raised.value, Circumstance)
    assert "nul" not in str(raised.value) and "not a time" not in str(raised.value)
    stored = journal.get_delivery(new.id)
    assert stored is not None and stored.status is ParseStatus.PENDING
    assert journal.summary().points == 0


def with_fixed_account(journal: Journal, path_or_url: str) -> Journal:
    """Add the account 'acct' by hand: equal ids make equal showcases comparable."""
    if isinstance(journal, SqliteJournal):
        with closing(sqlite3.connect(path_or_url)) as conn, conn:
            conn.execute(
                "INSERT INTO accounts (id, name, token_hash, created_at)"
                " VALUES ('acct', 'a', 'h', 'x')"
            )
    else:
        with raw(path_or_url) as server:
            server.execute(
                "INSERT INTO accounts (id, name, token_hash, created_at)"
                " VALUES ('acct', 'a', 'h', now())"
            )
    return journal


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[SqliteJournal]:
    """The reference: a SQLite journal whose account has the id 'acct'."""
    j = SqliteJournal(str(tmp_path / "journal.db"))
    j.migrate()
    with_fixed_account(j, j.path)
    yield j
    j.close()


# --- points ----------------------------------------------------------------------------------


def test_a_key_a_delivery_carries_twice_keeps_its_last_point(
    journal: PostgresJournal, account: Account
) -> None:
    """As row-by-row upserts would; one statement may not update a row twice."""
    new = new_delivery(account)
    journal.insert_delivery(new)

    write(journal, new.id, [a_point(1.0), a_point(2.0), a_point(3.0)])

    assert [p.point.qty for p in journal.export_points()] == [3.0]
    stored = journal.get_delivery(new.id)
    assert stored is not None and stored.points == 3


def test_the_same_writes_give_the_same_rows_and_fingerprint_as_on_sqlite(
    pg_url: str, journal: PostgresJournal, lite: SqliteJournal
) -> None:
    """One showcase reads back the same, and has one fingerprint, on either backend."""
    with_fixed_account(journal, pg_url)
    points = [
        Point("heart_rate", f, "Watch ’7", f"2026-01-0{d}T0{h}:00:00.000000Z", -300,
              f"2026-01-0{d}T0{h}:59:59.000000Z", 60.5 + h, None, "count/min", '{"n":1}')
        for d in (1, 2) for h in range(3) for f in ("min", "max")
    ] + [a_point(0.1 + 0.2, "0001-01-01T00:00:00.000001Z", "’"), a_point(7, source="Z")]  # fmt: skip  # noqa: E501
    batches = [points[:8], points[4:]]  # overlapping: the second layer wins the overlap
    for j in (lite, journal):
        for n, batch in enumerate(batches):
            j.insert_delivery(NewDelivery(f"d{n}", "acct", T0 + timedelta(seconds=n), "k", 1, "x"))
            write(j, f"d{n}", batch)

    assert list(journal.export_points()) == list(lite.export_points())
    assert {p.delivery_id for p in journal.export_points()} == {"d0", "d1"}
    assert journal.fingerprint() == lite.fingerprint()
    assert journal.fingerprint("acct") == lite.fingerprint("acct")


# --- records ---------------------------------------------------------------------------------


def workout(identity: str, start: str | None, note: str, **series: list[float]) -> Record:
    items = tuple(
        Item(name, seq, f"2026-01-01T00:0{seq}:00.000000Z" if name == "route" else None, v,
             lat=1.5 if name == "route" else None, extra='{"k":1}' if seq == 0 else None)
        for name, values in sorted(series.items()) for seq, v in enumerate(values)
    )  # fmt: skip
    end = None if start is None else start.replace("T00", "T01")
    return Record("workouts", identity, start, end, 60, "Run", None, note, items)


# three layers of overlapping records, in journal order: the second drops w1's route
# (inherited) and carries w2 twice (its last copy wins), the third is older in time
# than nothing but carries a new heart-rate series for w1
LAYERS = [
    [
        workout("w1", "2026-01-01T00:00:00.000000Z", '{"v":1}', route=[1, 2], hr=[60]),
        workout("w0", None, '{"v":1}'),
    ],
    [
        workout("w1", "2026-01-01T00:00:00.000000Z", '{"v":2}', hr=[61, 62]),
        workout("w2", "2026-01-02T00:00:00.000000Z", '{"v":2}', hr=[1]),
        workout("w2", "2026-01-02T00:00:00.000000Z", '{"v":3}', hr=[2, 3]),
    ],
    [workout("w1", "2026-01-01T00:00:00.000000Z", '{"v":4}', hr=[70])],
]


def fold_layers(journal: Journal, order: list[int]) -> None:
    for n in sorted(order):
        journal.insert_delivery(
            NewDelivery(f"d{n}", "acct", T0 + timedelta(seconds=n), "k", 1, "x")
        )
    for n in order:
        journal.write_outcome(
            f"d{n}",
            expected=ParseStatus.PENDING,
            status=ParseStatus.PARSED,
            uncovered=(),
            failure=None,
            points=[a_point(float(n))],
            records=LAYERS[n],
        )


def test_records_read_back_and_hash_as_on_sqlite(
    pg_url: str, journal: PostgresJournal, lite: SqliteJournal
) -> None:
    with_fixed_account(journal, pg_url)
    for j in (lite, journal):
        fold_layers(j, [0, 1, 2])

    exports: list[dict[str, object]] = [
        {},
        {"section": "workouts"},
        {"account_id": "acct", "start_from": "2026-01-02"},
        {"start_to": "2026-01-02"},
        {"section": "ecg"},
    ]
    for filters in exports:
        assert list(journal.export_records(**filters)) == list(lite.export_records(**filters))  # type: ignore[arg-type]
    got = {r.record.identity: r for r in journal.export_records()}
    assert [r.record.identity for r in journal.export_records()] == ["w0", "w1", "w2"]
    assert got["w1"].record.body == '{"v":4}' and got["w1"].delivery_id == "d2"
    assert [(i.series, i.qty) for i in got["w1"].record.items] == [
        ("hr", 70), ("route", 1), ("route", 2)
    ]  # fmt: skip
    assert [i.qty for i in got["w2"].record.items] == [2, 3]
    assert journal.summary().records == lite.summary().records == {"workouts": 3}
    assert journal.fingerprint() == lite.fingerprint()
    assert journal.fingerprint("acct") == lite.fingerprint("acct")


def test_records_come_out_the_same_whatever_order_their_layers_are_folded_in(
    lite: SqliteJournal,
) -> None:
    fold_layers(lite, [0, 1, 2])
    expected = lite.fingerprint()
    for order in itertools.permutations(range(3)):
        with pg.fresh_database() as url:
            journal = PostgresJournal(url)
            journal.migrate()
            with_fixed_account(journal, url)
            fold_layers(journal, list(order))
            assert journal.fingerprint() == expected, order
            journal.close()


def test_an_account_keeps_its_time_zone(journal: PostgresJournal, account: Account) -> None:
    journal.set_time_zone(account.id, "Europe/Paris")

    assert journal.get_account(account.id) == Account(
        account.id, "alice", account.created_at, "Europe/Paris"
    )
    with pytest.raises(HealthlogError):
        journal.set_time_zone("nobody", "UTC")


# --- times -----------------------------------------------------------------------------------


def test_times_are_timestamptz_and_read_back_in_utc_whatever_the_servers_zone(
    pg_url: str,
) -> None:
    """Year 1 included: in a zone with a local mean time it would come back shifted."""
    with raw(pg_url) as conn:
        conn.execute(f"ALTER DATABASE \"{pg_url.rsplit('/', 1)[1]}\" SET timezone = 'Europe/Paris'")
    journal = PostgresJournal(pg_url)
    journal.migrate()
    account = journal.add_account("alice", "h")
    journal.insert_delivery(NewDelivery("0", account.id, ZERO_CURSOR.received_at, "k", 1, "x"))

    stored = journal.get_delivery("0")
    assert stored is not None and stored.received_at == ZERO_CURSOR.received_at
    assert stored.received_at.utcoffset() == timedelta(0)
    assert journal.pending_page(ZERO_CURSOR, 1)[0].id == "0"
    assert journal.pending_page(Cursor(ZERO_CURSOR.received_at, "0"), 1) == []
    with raw(pg_url) as conn:
        kinds = conn.execute(
            "SELECT DISTINCT data_type FROM information_schema.columns"
            " WHERE table_schema = 'public' AND (column_name IN ('start', 'end', 't')"
            " OR column_name LIKE '%\\_at' AND table_name <> 'schema_migrations')"
        ).fetchall()
    assert kinds == [("timestamp with time zone",)]
    journal.close()


texts = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
).map(to_text)


@given(at=texts, prefix=st.one_of(texts.map(lambda t: t[: len(t) // 2]), texts, st.text()))
def test_a_start_bound_holds_exactly_where_the_text_comparison_does(at: str, prefix: str) -> None:
    """``start >= first_at_or_after(p)`` is ``text(start) >= p``: SQLite's semantics."""
    bound = first_at_or_after(prefix)
    instant = datetime.fromisoformat(at)

    assert (bound is not None and instant >= bound) == (at >= prefix)


# --- the test helper ---------------------------------------------------------------------------


@pytest.mark.parametrize("required", [False, True])
def test_a_missing_server_skips_the_test_or_fails_it_when_required(
    monkeypatch: pytest.MonkeyPatch, required: bool
) -> None:
    port = free_port()
    monkeypatch.setattr(pg, "MAINTENANCE_URL", f"postgresql://postgres@127.0.0.1:{port}/x")
    monkeypatch.setattr(pg, "REQUIRE_POSTGRES", required)
    pg._unreachable.cache_clear()
    try:
        outcome = pytest.fail.Exception if required else pytest.skip.Exception
        with pytest.raises(outcome, match=r"not reachable: .*Connection refused"):
            pg.require_server()
    finally:
        pg._unreachable.cache_clear()  # the next test asks the real server again


# --- wiring ----------------------------------------------------------------------------------


def test_wiring_opens_a_postgres_journal_for_a_postgresql_url(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://")):
        journal = wiring.open_journal(
            Settings(journal_url=url, busy_timeout_ms=1234, journal_retries=2)
        )
        assert isinstance(journal, PostgresJournal)
        journal.migrate()
        assert journal.count_pending() == 0
        journal.close()
