"""What only the SQLite adapter does: its query plans, migrations, locks and pragmas."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from healthlog import ids
from healthlog.errors import (
    Circumstance,
    HealthlogError,
    JournalBusy,
    JournalUnavailable,
)
from healthlog.journal import core, migrate, sqlite
from healthlog.journal.port import ZERO_CURSOR
from healthlog.journal.rows import from_text, to_text
from healthlog.journal.sqlite import SqliteJournal
from healthlog.journal.statements import Statements
from healthlog.model import Account, NewDelivery, ParseStatus, Point
from hypothesis import given
from hypothesis import strategies as st

T0 = ids.now().replace(microsecond=0)


@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "journal.db")


@pytest.fixture
def journal(path: str) -> Iterator[SqliteJournal]:
    j = SqliteJournal(path)
    j.migrate()
    yield j
    j.close()


@pytest.fixture
def account(journal: SqliteJournal) -> Account:
    return journal.add_account("alice", "hash-a")


def new_delivery(account: Account, at: datetime | None = None) -> NewDelivery:
    received_at = T0 if at is None else at
    return NewDelivery(
        id=ids.new_delivery_id(received_at),
        account_id=account.id,
        received_at=received_at,
        archive_key="k",
        size=2,
        content_type="application/json",
    )


def a_point(qty: float) -> Point:
    return Point("step_count", "qty", "Watch", "2026-01-01T00:00:00.000000Z", 0, None, qty,
                 None, "count")  # fmt: skip


def raw(path: str) -> closing[sqlite3.Connection]:
    """A plain connection beside the journal's, closed at the end of the with-block."""
    return closing(sqlite3.connect(path, isolation_level=None))


def schema(path: str) -> list[tuple[str, str, str | None]]:
    with raw(path) as conn:
        return conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()


@pytest.fixture
def locker(path: str, journal: SqliteJournal) -> Iterator[sqlite3.Connection]:
    """Another connection to the same file, holding the write lock until released."""
    with raw(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        if conn.in_transaction:
            conn.execute("ROLLBACK")


# --- query plans -----------------------------------------------------------------------------


def plan(journal: SqliteJournal, sql: str, params: dict[str, object]) -> str:
    with raw(journal.path) as conn:
        rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return "\n".join(row[-1] for row in rows)


def test_pending_page_searches_the_partial_index_and_never_scans_deliveries(
    journal: SqliteJournal, account: Account
) -> None:
    for n in range(50):
        journal.insert_delivery(new_delivery(account, T0 + timedelta(seconds=n)))
    with raw(journal.path) as conn:
        conn.execute("ANALYZE")  # the plan holds with statistics too

    cursor = {"received_at": to_text(T0), "id": "", "limit": 10}
    found = plan(journal, journal.driver.statements["pending_page"], cursor)

    assert "SEARCH deliveries USING" in found, found
    assert "INDEX deliveries_pending ((received_at,id)>(?,?))" in found, found
    assert "SCAN deliveries" not in found, found
    assert "TEMP B-TREE" not in found, found  # the index gives the order: no sort


def test_count_pending_walks_the_partial_index_not_the_table(journal: SqliteJournal) -> None:
    """Its cost is the backlog, not the journal."""
    found = plan(journal, journal.driver.statements["count_pending"], {})

    assert "INDEX deliveries_pending" in found, found
    assert "deliveries_status" not in found, found


def test_one_metric_in_a_range_of_starts_is_one_range_of_the_points_key(
    journal: SqliteJournal,
) -> None:
    """Through the view points: the metric's first series, then a range of point_rows."""
    sql = journal.driver.statements
    ranged = " AND account_id = :account_id AND metric = :metric AND start >= :low"
    for query in (
        sql.render("day_tally", day=sql["bucket_day"]),
        sql.render("point_buckets", bucket=sql["bucket_hour"], **{"and": " AND start >= :low"}),
        sql.render("export_points", **{"and": ranged}),
    ):
        found = plan(journal, query, {"account_id": "a", "metric": "m", "field": "f",
                                      "low": "x", "high": "y", "bar": "x"})  # fmt: skip

        assert "SEARCH p USING PRIMARY KEY (metric_key=? AND start>" in found, found
        assert "SCAN p" not in found, found
        assert "USE TEMP B-TREE FOR ORDER BY" not in found, found  # only ties are sorted


def test_an_export_of_everything_sorts_only_the_points_of_one_start(
    journal: SqliteJournal,
) -> None:
    for name in ("export_points", "fingerprint_points"):
        found = plan(journal, journal.driver.statements.render(name, **{"and": ""}), {})

        assert found.splitlines()[0].startswith("SCAN m USING"), found
        assert "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY" in found, found


@pytest.mark.parametrize(
    "filters",
    ["", " AND r.account_id = :account_id", " AND r.account_id = :account_id AND r.section = :s"],
)
def test_a_record_export_sorts_only_each_records_own_items_never_the_whole_export(
    journal: SqliteJournal, filters: str
) -> None:
    """Records lead the join, so the items come in record order: memory stays flat."""
    sql = journal.driver.statements.render("export_record_items", **{"and": filters})

    found = plan(journal, sql, {"account_id": "a", "s": "workouts"})

    assert found.splitlines()[0].startswith(("SCAN r ", "SEARCH r ")), found
    assert "USE TEMP B-TREE FOR ORDER BY" not in found, found  # a sort of every item


# --- migrations ------------------------------------------------------------------------------


def test_a_database_migrated_in_two_steps_equals_a_fresh_one(tmp_path: Path) -> None:
    head = migrate.head(migrate.load("sqlite"))
    assert head >= 2
    fresh, stepped = str(tmp_path / "fresh.db"), str(tmp_path / "stepped.db")
    one = SqliteJournal(fresh)
    one.migrate()
    one.close()

    # every split point: a database at version n, reopened and taken to head, equals fresh
    for n in range(1, head):
        step = str(tmp_path / f"stepped-{n}.db")
        first = SqliteJournal(step)
        first.migrate(target=n)
        first.close()
        second = SqliteJournal(step)
        second.migrate()
        second.close()
        assert schema(step) == schema(fresh), n

    first = SqliteJournal(stepped)
    first.migrate(target=2)
    assert "deliveries_pending" not in {name for _, name, _ in schema(stepped)}
    first.close()
    second = SqliteJournal(stepped)
    second.migrate()
    second.close()

    assert schema(stepped) == schema(fresh)
    with raw(stepped) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
    assert versions == list(range(1, head + 1))


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    versions = [m.version for m in migrate.load("sqlite")]

    assert versions == list(range(1, len(versions) + 1))


def test_a_migration_is_applied_in_the_callers_transaction(tmp_path: Path) -> None:
    """The runner never commits: a failing migration leaves nothing behind."""
    broken = migrate.Migration(1, "broken", "CREATE TABLE a (x);\n-- between\nNOT SQL;\n")
    journal = SqliteJournal(str(tmp_path / "unused.db"))
    with raw(":memory:") as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(migrate.SCHEMA_MIGRATIONS_DDL)
        with pytest.raises(sqlite3.OperationalError):
            migrate.run(core._MigrationSession(journal, conn), [broken])
        conn.execute("ROLLBACK")

        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []


# --- busy ------------------------------------------------------------------------------------


def test_a_busy_database_makes_insert_raise_journal_busy_and_the_insert_lands_after(
    path: str, account: Account, locker: sqlite3.Connection
) -> None:
    impatient = SqliteJournal(path, busy_timeout_ms=50, retries=2)
    new = new_delivery(account)

    with pytest.raises(JournalBusy) as raised:
        impatient.insert_delivery(new)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)

    locker.execute("ROLLBACK")
    assert impatient.insert_delivery(new) is True
    assert impatient.pending_page(ZERO_CURSOR, 10)[0].id == new.id
    impatient.close()


def test_a_busy_database_makes_write_outcome_raise_journal_busy_and_write_nothing(
    path: str, journal: SqliteJournal, account: Account
) -> None:
    new = new_delivery(account)
    journal.insert_delivery(new)
    impatient = SqliteJournal(path, busy_timeout_ms=50, retries=2)
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")

    def write() -> None:
        impatient.write_outcome(
            new.id,
            expected=ParseStatus.PENDING,
            status=ParseStatus.PARSED,
            uncovered=(),
            failure=None,
            points=[a_point(3.0)],
        )

    with pytest.raises(JournalBusy):
        write()
    # readers are not blocked by the writer (WAL)
    stored = impatient.get_delivery(new.id)
    assert stored is not None and stored.status is ParseStatus.PENDING
    assert impatient.summary().points == 0

    locker.execute("ROLLBACK")
    locker.close()
    write()
    stored = impatient.get_delivery(new.id)
    assert stored is not None and stored.status is ParseStatus.PARSED
    assert impatient.summary().points == 1
    impatient.close()


def test_a_lock_released_between_retries_lets_the_write_land(
    path: str, account: Account, locker: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry restarts the transaction: no JournalBusy when the lock goes in time."""
    pauses: list[float] = []

    def release_instead_of_sleeping(seconds: float) -> None:
        pauses.append(seconds)
        locker.execute("ROLLBACK")

    monkeypatch.setattr(core, "_sleep", release_instead_of_sleeping)
    impatient = SqliteJournal(path, busy_timeout_ms=20, retries=2)

    assert impatient.insert_delivery(new_delivery(account)) is True
    assert len(pauses) == 1 and 0 < pauses[0] <= 0.2
    impatient.close()


def test_retries_back_off_with_bounded_pauses_before_journal_busy(
    path: str, account: Account, locker: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(core, "_sleep", pauses.append)
    impatient = SqliteJournal(path, busy_timeout_ms=1, retries=3)

    with pytest.raises(JournalBusy):
        impatient.insert_delivery(new_delivery(account))

    assert len(pauses) == 3
    assert all(0 < p <= 0.2 for p in pauses)
    impatient.close()


# --- pragmas, files, errors ------------------------------------------------------------------


def test_the_journal_runs_in_wal_mode_with_full_sync_and_foreign_keys(
    journal: SqliteJournal,
) -> None:
    with journal.driver.pool.connection() as conn:
        pragmas = [
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        ]

    assert pragmas == ["wal", 2, 1, 5000]  # synchronous 2 is FULL


def test_the_database_folder_is_created(tmp_path: Path) -> None:
    journal = SqliteJournal(str(tmp_path / "var" / "deep" / "journal.db"))
    journal.migrate()
    journal.close()

    assert (tmp_path / "var" / "deep" / "journal.db").is_file()


@pytest.mark.parametrize("where", ["under_a_file", "a_directory"])
def test_a_database_that_cannot_be_opened_raises_journal_unavailable(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "file").write_text("not a folder")
    path = tmp_path / "file" / "journal.db" if where == "under_a_file" else tmp_path
    journal = SqliteJournal(str(path))

    with pytest.raises(JournalUnavailable) as raised:
        journal.migrate()
    assert not isinstance(raised.value, sqlite3.Error)


def test_a_file_that_is_not_a_database_raises_journal_unavailable(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"this is not a SQLite database, not at all" * 100)
    journal = SqliteJournal(str(tmp_path / "junk.db"))

    with pytest.raises(JournalUnavailable):
        journal.count_pending()


def test_an_unmigrated_database_raises_journal_unavailable(path: str) -> None:
    journal = SqliteJournal(path)

    with pytest.raises(JournalUnavailable):
        journal.pending_page(ZERO_CURSOR, 1)
    with pytest.raises(JournalUnavailable):
        list(journal.export_points())
    journal.close()


def test_a_closed_journal_raises_journal_unavailable(journal: SqliteJournal) -> None:
    journal.close()

    with pytest.raises(JournalUnavailable):
        journal.count_pending()


def test_a_point_the_database_cannot_bind_is_not_a_circumstance(
    journal: SqliteJournal, account: Account
) -> None:
    """A bad value is the delivery's fault: a plain HealthlogError, not JournalBusy."""
    new = new_delivery(account)
    journal.insert_delivery(new)
    bad = Point("m", "qty", "s", "2026-01-01T00:00:00.000000Z", None, None, object(), None, "u")  # type: ignore[arg-type]

    with pytest.raises(HealthlogError) as raised:
        journal.write_outcome(
            new.id,
            expected=ParseStatus.PENDING,
            status=ParseStatus.PARSED,
            uncovered=(),
            failure=None,
            points=[bad],
        )
    assert not isinstance(raised.value, Circumstance)
    stored = journal.get_delivery(new.id)
    assert stored is not None and stored.status is ParseStatus.PENDING


def test_times_are_stored_as_fixed_width_utc_text() -> None:
    assert to_text(ZERO_CURSOR.received_at) == "0001-01-01T00:00:00.000000Z"
    at = ids.now()
    assert from_text(to_text(at)) == at
    assert len(to_text(at.replace(microsecond=0))) == 27
    with pytest.raises(ValueError, match="aware"):
        to_text(at.replace(tzinfo=None))


# --- threads ---------------------------------------------------------------------------------


def test_threads_share_one_journal_and_every_write_lands(
    journal: SqliteJournal, account: Account
) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def ingest(n: int) -> None:
        try:
            start.wait()
            for k in range(25):
                at = T0 + timedelta(seconds=n, microseconds=k)
                journal.insert_delivery(new_delivery(account, at))
                journal.pending_page(ZERO_CURSOR, 5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ingest, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert journal.count_pending() == 200
    assert len(journal.driver.pool._idle) <= sqlite._POOL_KEEP


def test_a_thread_waits_its_turn_in_the_process_not_in_sqlites_busy_handler(
    path: str, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write of one thread while another of the same process writes starts its
    transaction only once the other has committed: it waits for the process's turn
    (woken by the commit), never inside SQLite's lock, whose busy handler polls with
    sleeps. Each statement's start is seen through SQLite's trace callback."""
    seen: list[tuple[str, str]] = []
    b_began = threading.Event()
    connect = sqlite3.connect

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]

        def trace(statement: str) -> None:
            who = threading.current_thread().name
            seen.append((who, statement))
            if who == "b" and statement == "BEGIN IMMEDIATE":
                b_began.set()

        conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    journal = SqliteJournal(path, retries=0)
    a_holds, b_is_off = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def hold(conn: object) -> None:
        a_holds.set()
        b_is_off.wait()
        # B's transaction must not start while this one is open; on a driver without
        # the turn it does (and then blocks inside SQLite): give it the time to show
        outcome["b_began_while_a_held"] = b_began.wait(timeout=0.5)

    def a() -> None:
        journal.driver.attempt(hold, write=True)

    def b() -> None:
        a_holds.wait()
        b_is_off.set()
        outcome["b"] = journal.insert_delivery(new_delivery(account))

    threads = [threading.Thread(target=a, name="a"), threading.Thread(target=b, name="b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    journal.close()

    assert outcome == {"b_began_while_a_held": False, "b": True}
    order = [entry for entry in seen if entry[1] in ("BEGIN IMMEDIATE", "COMMIT")]
    assert order[-4:] == [("a", "BEGIN IMMEDIATE"), ("a", "COMMIT"),
                          ("b", "BEGIN IMMEDIATE"), ("b", "COMMIT")]  # fmt: skip


def test_a_wait_for_the_turn_past_the_writes_bound_is_a_busy_journal(
    journal: SqliteJournal, account: Account
) -> None:
    """The turn is waited for as SQLite's lock is: up to the write's bound, and a wait
    given up is JournalBusy (others' time), with nothing written."""
    from healthlog.errors import WriteInterrupted
    from healthlog.journal.driver import write_bound

    a_holds, done = threading.Event(), threading.Event()

    def hold(conn: object) -> None:
        a_holds.set()
        done.wait(timeout=30)

    holder = threading.Thread(target=lambda: journal.driver.attempt(hold, write=True))
    holder.start()
    a_holds.wait()
    try:
        with pytest.raises(JournalBusy), write_bound(time.monotonic() + 0.05):
            journal.insert_delivery(new_delivery(account))
        # no time left at all: the write's own deadline, as before any wait
        with pytest.raises(WriteInterrupted), write_bound(time.monotonic() - 1):
            journal.insert_delivery(new_delivery(account))
    finally:
        done.set()
        holder.join()
    assert journal.count_pending() == 0
    assert journal.insert_delivery(new_delivery(account)) is True  # the turn is free


def test_a_busy_timeout_longer_than_a_lock_can_wait_still_writes(
    path: str, account: Account
) -> None:
    patient = SqliteJournal(path, busy_timeout_ms=10**13)  # longer than TIMEOUT_MAX
    assert patient.insert_delivery(new_delivery(account)) is True
    patient.close()


def test_an_abandoned_export_gives_its_connection_back(
    journal: SqliteJournal, account: Account
) -> None:
    new = new_delivery(account)
    journal.insert_delivery(new)
    points = [
        Point("m", "qty", "s", f"2026-01-01T00:00:{n:02d}.000000Z", None, None, n, None, "u")
        for n in range(10)
    ]
    journal.write_outcome(
        new.id,
        expected=ParseStatus.PENDING,
        status=ParseStatus.PARSED,
        uncovered=(),
        failure=None,
        points=points,
    )
    rows = journal.export_points()
    next(rows)
    rows.close()  # what garbage collection does to an abandoned generator

    assert all(not conn.in_transaction for conn in journal.driver.pool._idle)
    # the write lock is free: a write from another connection does not wait
    other = SqliteJournal(journal.path, busy_timeout_ms=0, retries=0)
    assert other.insert_delivery(new_delivery(account, T0 + timedelta(days=1))) is True
    other.close()


def test_migration_0006_fills_the_extents_of_deliveries_folded_before_it(
    tmp_path: Path,
) -> None:
    """What the layers hold is the best there is of what older deliveries brought."""
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    journal.migrate(target=5)
    with raw(path) as conn:  # points a delivery folded at version 5 left
        conn.executemany(
            "INSERT INTO points (account_id, metric, field, source, start, unit,"
            " layer_received_at, layer_id) VALUES ('a', 'm', 'qty', 's', ?, 'u', 'r', 'd1')",
            [(f"2026-01-0{day}T00:00:00.000000Z",) for day in (3, 1, 2)],
        )
        conn.commit()
    journal.migrate()

    with raw(path) as conn:
        rows = conn.execute(
            "SELECT delivery_id, metric, account_id, received_at, first_start, last_start,"
            " points FROM delivery_extents"
        ).fetchall()
    journal.close()

    assert rows == [
        ("d1", "m", "a", "r", "2026-01-01T00:00:00.000000Z", "2026-01-03T00:00:00.000000Z", 3)
    ]


def test_migration_0007_counts_the_points_folded_before_it_per_local_day(
    tmp_path: Path,
) -> None:
    """Counted on their phone's day; when they arrived was not kept, so none is late."""
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    journal.migrate(target=6)
    with raw(path) as conn:  # points a delivery folded at version 6 left
        conn.executemany(
            "INSERT INTO points (account_id, metric, field, source, start, utc_offset, unit,"
            " layer_received_at, layer_id) VALUES ('a', 'm', 'qty', 's', ?, ?, 'u', 'r', 'd1')",
            [
                ("2026-01-01T23:30:00.000000Z", 60),  # the 2nd on the phone's clock
                ("2026-01-02T10:00:00.000000Z", None),
                ("2026-01-03T00:30:00.000000Z", -60),  # the 2nd as well
            ],
        )
        conn.commit()
    journal.migrate()

    assert journal.metric_days(account_id="a") == [("m", "2026-01-02", 3)]
    assert journal.late_points(account_id="a") == []
    journal.close()


def test_migration_0009_counts_the_records_each_folded_delivery_holds(tmp_path: Path) -> None:
    """What a layer holds is the best there is of what an older delivery brought."""
    path = str(tmp_path / "j.db")
    journal = SqliteJournal(path)
    journal.migrate(target=8)
    account = journal.add_account("alice", "hash")
    folded, waiting = (new_delivery(account, T0 + timedelta(seconds=n)) for n in (1, 2))
    for delivery in (folded, waiting):
        journal.insert_delivery(delivery)
    with raw(path) as conn:  # what a fold at version 8 left: two workouts of the first
        conn.execute("UPDATE deliveries SET status = 'parsed' WHERE id = ?", (folded.id,))
        conn.executemany(
            "INSERT INTO records (account_id, section, identity, body, layer_received_at,"
            " layer_id) VALUES (?, 'workouts', ?, '{}', 'r', ?)",
            [(account.id, "w1", folded.id), (account.id, "w2", folded.id)],
        )
        conn.commit()
    journal.migrate()
    counted = {d.id: d.records for d in journal.deliveries()}
    journal.close()
    assert counted == {folded.id: 2, waiting.id: 0}


@given(
    at=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    offset=st.one_of(st.none(), st.integers(min_value=-1440, max_value=1440)),
)
def test_the_day_of_a_point_is_dates_day_on_the_phones_clock(
    at: datetime, offset: int | None
) -> None:
    """bucket_day's shortcut (the UTC day's text when the offset keeps it) is date()'s."""
    expression = Statements.load("sqlite", param=":{}")["bucket_day"]
    start = to_text(at.replace(tzinfo=UTC))
    with raw(":memory:") as conn:
        got, expected = conn.execute(
            f"SELECT {expression}, date(start, coalesce(utc_offset, 0) || ' minutes')"
            " FROM (SELECT ? AS start, ? AS utc_offset)",
            (start, offset),
        ).fetchone()
    assert got == expected


def test_a_series_names_are_stored_once_not_in_every_point(
    journal: SqliteJournal, account: Account
) -> None:
    """Issue #9: a long metric name and source were copied into every point row."""
    from healthlog.hae.metrics import MAX_NAME, MAX_SOURCE

    name, source = "m" * MAX_NAME, "s" * MAX_SOURCE
    delivery = new_delivery(account)
    journal.insert_delivery(delivery)
    points = [
        Point(
            name,
            "qty",
            source,
            f"2026-01-01T{n // 60:02}:{n % 60:02}:00.000000Z",
            0,
            None,
            float(n),
            None,
            "u" * MAX_NAME,
        )
        for n in range(1440)
    ]
    with raw(journal.path) as conn:
        conn.execute("VACUUM")
        empty = conn.execute("PRAGMA page_count").fetchone()[0]
    journal.write_outcome(
        delivery.id, expected=ParseStatus.PENDING, status=ParseStatus.PARSED, uncovered=(),
        failure=None, points=points,
    )  # fmt: skip
    with raw(journal.path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        pages, size = conn.execute("PRAGMA page_count").fetchone()[0], 4096
    per_point = (pages - empty) * size / len(points)
    assert per_point < 200, per_point  # the names alone were 1 536 bytes a point
    with raw(journal.path) as conn:
        assert conn.execute("SELECT count(*) FROM series").fetchone()[0] == 1
    assert len(list(journal.export_points())) == len(points)
