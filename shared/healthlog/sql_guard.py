"""Guarded SQL over one account's showcase: what the MCP server's ``sql`` tool runs.

A query sees only the views of ``VIEWS`` (docs/mcp.md lists their columns), each filtered
to the account, never ``accounts``, token hashes, headers or another account's rows. It
is refused unless it is one ``SELECT`` (or ``WITH ... SELECT``), and it runs with a row
limit and a time limit. Several layers, each enough on its own for what it covers:

1. ``check``: sqlglot parses the text in the backend's dialect. One statement, a query,
   no data-changing node anywhere (a ``DELETE`` in a ``WITH``, ``SELECT ... INTO``), and
   every table it reads, scope by scope, one of the views (a CTE of the same query is
   the query's own). On PostgreSQL, functions sqlglot does not know as standard SQL must
   be on ``PG_FUNCTIONS`` (so no ``pg_read_file``, ``dblink``, ``set_config``,
   ``query_to_xml``, ``pg_sleep``, large objects...).
2. The connection. SQLite: the file opened read-only (``mode=ro``), the views ``TEMP``
   (in the connection's own temporary schema), and an authorizer that allows a
   ``SELECT``, the reading of a view, of the journal's tables only *through* a view,
   and functions but ``load_extension`` and the file ones (one gap, which layer 1
   closes: SQLite names no view for a read of *no column* of ``series`` or
   ``point_rows``, which ``my_points`` joins, so such a read is allowed; alone it would
   let a query count every account's series and points, never read a value);
   ``ATTACH`` is also limited to 0 databases; a progress handler stops a query past
   its time. PostgreSQL: a session signed in as the account's own reader role, which
   may read the account's views and nothing else (``PostgresGuard``), each query in a
   ``READ ONLY`` transaction with ``statement_timeout``, rows read through a
   server-side cursor; the parser also refuses attribute notation (``x.fn``).
3. The answer: at most ``limit`` rows, each cell at most ``CELL_CHARS`` characters.

Error messages name the rule a query broke and never quote a value of the data.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import hashlib
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from healthlog.errors import HealthlogError

Dialect = Literal["sqlite", "postgres"]

#: characters of one cell in an answer; a longer value is cut and says so
CELL_CHARS = 500
#: the largest text or blob a SQLite query may make (``SQLITE_LIMIT_LENGTH``): a
#: one-opcode function (``randomblob``, a wide ``printf``) stays that small and short,
#: and a stored record body (an ECG's JSON) is far below it
VALUE_BYTES = 16 * 1024 * 1024


class Refused(HealthlogError):
    """A query the guard does not run, or one stopped by a limit; the message says why."""


@dataclass(frozen=True)
class View:
    description: str
    #: (column, what it holds); the SQL of each backend is in ``_SQLITE``/``_POSTGRES``
    columns: tuple[tuple[str, str], ...]


VIEWS: dict[str, View] = {
    "my_points": View(
        "every metric point of the showcase (the newest delivery of each)",
        (
            ("metric", "HAE's metric name, e.g. step_count, heart_rate"),
            ("field", "qty; min/avg/max for heart rate; a sleep stage; systolic/diastolic"),
            ("source", "the device or app that recorded it"),
            ("start", "UTC time (SQLite: text like 2026-03-01T07:00:00.000000Z)"),
            ("local_start", "the phone's local time, text YYYY-MM-DDTHH:MM:SS"),
            ("utc_offset", "the phone's offset east of UTC in minutes (NULL: UTC)"),
            ("end", "UTC end time for an interval, else NULL"),
            ("qty", "the value, in unit"),
            ("text", "a textual value (a sleep segment's stage), else NULL"),
            ("unit", "the unit of qty"),
            ("extra", "the point's other fields, JSON text"),
            ("delivery_id", "the delivery that holds it"),
        ),
    ),
    "my_records": View(
        "the records of the other sections: workouts, ecg, symptoms, stateOfMind, ...",
        (
            ("section", "workouts, ecg, symptoms, stateOfMind, medications, ..."),
            ("identity", "the record's key in its section"),
            ("start", "UTC time"),
            ("end", "UTC time"),
            ("utc_offset", "minutes east of UTC"),
            ("name", "e.g. a workout's name"),
            ("source", "device or app"),
            ("body", "the record's fields as sent, JSON text"),
            ("delivery_id", "the delivery that holds it"),
        ),
    ),
    "my_record_items": View(
        "the series of records: a workout's route and heart rate, an ECG's voltages",
        (
            ("section", "as in my_records"),
            ("identity", "as in my_records"),
            ("series", "route, heartRateData, heartRateRecovery, voltageMeasurements, ..."),
            ("seq", "position in the series"),
            ("t", "UTC time"),
            ("qty", "the value, in unit"),
            ("lat", "latitude (route)"),
            ("lon", "longitude (route)"),
            ("alt", "altitude in metres (route)"),
            ("unit", "unit of qty"),
            ("extra", "other fields, JSON text"),
        ),
    ),
    "my_deliveries": View(
        "the deliveries the phone sent and how they were folded (no headers, no bodies)",
        (
            ("id", "the delivery's id"),
            ("received_at", "UTC time"),
            ("status", "pending, parsed, partial, failed"),
            ("size", "bytes"),
            ("content_type", "application/json or text/csv"),
            ("points", "points folded from it"),
            ("uncovered", "keys healthlog kept but could not read (JSON text on SQLite)"),
            ("failure", "why it failed, a class name"),
            ("attempts", "fold attempts so far"),
            ("folded_at", "UTC time"),
        ),
    ),
    "my_delivery_extents": View(
        "what each delivery brought of each metric series (for late samples)",
        (
            ("delivery_id", "the delivery"),
            ("metric", "metric name"),
            ("field", "field"),
            ("unit", "unit"),
            ("source", "source"),
            ("received_at", "UTC time the delivery came"),
            ("first_start", "its earliest point's start, UTC"),
            ("last_start", "its latest point's start, UTC"),
            ("points", "points it brought"),
        ),
    ),
    "my_daily": View(
        "per metric and day of the phone's clock, what the other tools count: a cumulative "
        "metric's day sum with overlapping sources counted once, a discrete one's average",
        (
            ("metric", "metric name"),
            ("field", "the field that stands for the metric (qty, avg, ...)"),
            ("unit", "the unit of value"),
            ("value_is", "sum or average"),
            ("day", "YYYY-MM-DD on the phone's clock"),
            ("value", "the day's value, as daily_summary and the dashboard give it"),
            ("points", "points that day"),
        ),
    ),
    "my_point_days": View(
        "per metric and day of the phone's clock: points held and how many arrived late",
        (
            ("metric", "metric name"),
            ("day", "YYYY-MM-DD on the phone's clock"),
            ("points", "points of the metric held on that day"),
            ("late", "how many of them arrived late (older than what earlier deliveries brought)"),
        ),
    ),
}

# the journal's view ``points`` as SQLite's my_points reads it: from the tables, by this
# view itself (the authorizer allows the journal's tables read by one of VIEWS, and the
# journal's own view would be the reader instead); migration 0011 has the same
_SQLITE_POINTS = (
    'SELECT m.account_id, m.metric, s.field, s.source, p.start, p.utc_offset, p."end", p.qty, '
    "p.text, s.unit, p.extra, p.layer_id FROM main.series AS m CROSS JOIN main.point_rows AS p "
    "CROSS JOIN main.series AS s WHERE p.metric_key = m.id AND s.id = p.series_id"
)

#: the journal's tables my_points joins: SQLite may read one of them for no column
_COLUMNLESS = frozenset({"series", "point_rows"})

# the views' SQL: {account} is the account id as a quoted literal
_SQLITE = {
    "my_points": "SELECT metric, field, source, start, strftime('%Y-%m-%dT%H:%M:%S', start, "
    "coalesce(utc_offset, 0) || ' minutes') AS local_start, utc_offset, \"end\", qty, text, "
    "unit, extra, layer_id AS delivery_id FROM (" + _SQLITE_POINTS + ") "
    "WHERE account_id = {account}",
    "my_records": 'SELECT section, identity, start, "end", utc_offset, name, source, body, '
    "layer_id AS delivery_id FROM main.records WHERE account_id = {account}",
    "my_record_items": "SELECT section, identity, series, seq, t, qty, lat, lon, alt, unit, "
    "extra FROM main.record_items WHERE account_id = {account}",
    "my_deliveries": "SELECT id, received_at, status, size, content_type, points, uncovered, "
    "failure, attempts, folded_at FROM main.deliveries WHERE account_id = {account}",
    "my_delivery_extents": "SELECT delivery_id, metric, field, unit, source, received_at, "
    "first_start, last_start, points FROM main.delivery_extents WHERE account_id = {account}",
    "my_point_days": "SELECT metric, day, points, late FROM main.point_days "
    "WHERE account_id = {account}",
}
_POSTGRES = _SQLITE | {
    "my_points": "SELECT metric, field, source, start, to_char((start + make_interval(mins => "
    "coalesce(utc_offset, 0))) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') AS "
    'local_start, utc_offset, "end", qty, text, unit, extra, layer_id AS delivery_id '
    "FROM public.points WHERE account_id = {account}",
}
_POSTGRES = {name: sql.replace("main.", "public.") for name, sql in _POSTGRES.items()}

#: PostgreSQL functions outside sqlglot's standard ones that a query may call; any other
#: (pg_read_file, dblink, set_config, current_setting, query_to_xml, lo_import, pg_sleep...)
#: is refused
PG_FUNCTIONS = frozenset(
    """
    abs acos age array_length array_to_string asin atan atan2 btrim cardinality cbrt ceil
    ceiling chr concat_ws corr covar_pop covar_samp cume_dist date_bin date_part degrees
    dense_rank div every first_value floor format initcap isfinite json_agg
    json_array_elements json_array_elements_text json_array_length json_build_object
    json_each json_extract_path json_extract_path_text json_object_keys json_typeof
    jsonb_agg jsonb_array_elements jsonb_array_elements_text jsonb_array_length
    jsonb_build_object jsonb_each jsonb_extract_path jsonb_extract_path_text
    jsonb_object_keys jsonb_typeof justify_days justify_hours justify_interval lag
    last_value lead log10 lpad ltrim make_date make_interval make_time make_timestamp
    make_timestamptz mode nth_value ntile percent_rank radians rank regexp_replace
    regr_intercept regr_slope repeat reverse round row_number rpad rtrim sign split_part
    stddev_pop stddev_samp string_to_array strpos timezone to_date to_number to_timestamp
    translate trunc unnest var_pop var_samp width_bucket
    """.split()  # noqa: SIM905 (a list of words, kept readable)
)

_WRITES: tuple[str, ...] = (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Pragma",
    "Copy", "Attach", "Detach", "Set", "Use", "Transaction", "Commit", "Rollback", "Into",
    "Lock",
)  # fmt: skip


def describe() -> str:
    """The views and their columns, as the ``sql`` tool's description shows them."""
    lines = []
    for name, view in VIEWS.items():
        columns = ", ".join(column for column, _ in view.columns)
        lines.append(f"{name} ({view.description}): {columns}")
    return "\n".join(lines)


def check(sql: str, dialect: Dialect) -> None:
    """Refused unless ``sql`` is one query that reads only the views (see the module)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.scope import traverse_scope

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise Refused(f"the query could not be parsed ({first[:200]})") from None
    if not trees:
        raise Refused("the query is empty")
    if len(trees) > 1:
        raise Refused("one statement only: remove the ';' and what follows it")
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        kind = type(tree).__name__.upper()
        raise Refused(f"SELECT only: {kind} statements are refused (the SQL tool is read-only)")
    for node in tree.walk():
        kind = type(node).__name__
        if kind in _WRITES:
            raise Refused(f"SELECT only: {kind.upper()} is refused (the SQL tool is read-only)")
        if isinstance(node, exp.Select) and node.args.get("into") is not None:
            raise Refused("SELECT ... INTO is refused (the SQL tool is read-only)")
        if isinstance(node, exp.Select) and node.args.get("locks"):
            raise Refused("SELECT ... FOR UPDATE/SHARE is refused (the SQL tool is read-only)")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    views = ", ".join(VIEWS)
    for table in tree.find_all(exp.Table):
        _check_table(table, ctes, views)
    try:
        scopes = traverse_scope(tree)
    except SqlglotError:
        raise Refused("the query's tables could not be resolved; simplify it") from None
    for scope in scopes:
        for source in scope.sources.values():
            if isinstance(source, exp.Table):
                _check_table(source, set(), views)
    if dialect == "sqlite":
        _check_printf_widths(tree)
    if dialect == "postgres":
        _check_field_selection(tree)
        for func in tree.find_all(exp.Func):
            if isinstance(func, exp.Anonymous) and func.name.lower() not in PG_FUNCTIONS:
                raise Refused(
                    f"function {func.name!r} is not allowed in the SQL tool "
                    "(aggregates, arithmetic, text, date and JSON functions are)"
                )


#: the widest field a SQLite printf/format may pad to: its padding is one opcode that
#: no time limit can stop (a width of 2**31 runs for seconds)
PRINTF_WIDTH = 1000
_PRINTF_FIELD = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d+))?")


def _check_printf_widths(tree: Any) -> None:
    """Refused: a SQLite ``printf``/``format`` whose format is not a literal, or names a
    width or precision from an argument (``*``) or over ``PRINTF_WIDTH``."""
    from sqlglot import exp

    for func in tree.find_all(exp.Func):
        if isinstance(func, exp.Format):
            form = func.this
        elif isinstance(func, exp.Anonymous) and func.name.lower() in ("printf", "format"):
            form = func.expressions[0] if func.expressions else None
        else:
            continue
        if not (isinstance(form, exp.Literal) and form.is_string):
            raise Refused("printf/format: the format must be a text literal in the SQL tool")
        for match in _PRINTF_FIELD.finditer(form.this):
            for size in match.groups():
                if size == "*" or (size is not None and int(size) > PRINTF_WIDTH):
                    raise Refused(
                        f"printf/format: a width or precision is at most {PRINTF_WIDTH}, "
                        "written in the format (not *)"
                    )


#: the columns a function in FROM gives besides those its alias names (jsonb_each's)
_FUNCTION_COLUMNS = frozenset({"key", "value", "ordinality"})


def _check_field_selection(tree: Any) -> None:
    """Refused: PostgreSQL's attribute notation. ``x.f``, where ``x`` is a function's
    row in FROM (``unnest(...) AS x``), and ``(expr).f`` are the call ``f(x)`` when
    ``f`` is no column, which would pass the function allowlist by the back door."""
    from sqlglot import exp

    columns = {c for view in VIEWS.values() for c, _ in view.columns} | _FUNCTION_COLUMNS
    rows: dict[str, set[str]] = {}
    for node in tree.walk():
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Func):
            source = node.this
        elif isinstance(node, exp.Unnest):
            source = node
        else:
            continue
        alias = node.args.get("alias")
        if isinstance(alias, exp.TableAlias) and alias.name:
            named = {c.name.lower() for c in alias.columns} | {alias.name.lower()}
            rows[alias.name.lower()] = named | _FUNCTION_COLUMNS
        else:  # named after the function
            for name in {"unnest", source.name.lower(), source.sql_name().lower()} - {""}:
                rows[name] = {name} | _FUNCTION_COLUMNS
    for column in tree.find_all(exp.Column):
        allowed = rows.get(column.table.lower()) if column.table else None
        if allowed is not None and column.name.lower() not in allowed:
            raise Refused(
                f"{column.table}.{column.name}: no such column of {column.table} "
                "(on PostgreSQL this notation would call a function; name a column)"
            )
    for dot in tree.find_all(exp.Dot):
        if dot.name.lower() not in columns:
            raise Refused(
                f"(...).{dot.name}: field selection of an expression is refused in the SQL "
                "tool (on PostgreSQL it would call a function); name a view's column"
            )


def _check_table(table: Any, ctes: set[str], views: str) -> None:
    from sqlglot import exp

    if isinstance(table.this, exp.Func):  # FROM generate_series(...): a function
        return
    name = table.name.lower()
    if table.args.get("db") is not None or table.args.get("catalog") is not None:
        raise Refused(f"{table.sql()!r}: name the views without a schema; the views: {views}")
    if name not in VIEWS and name not in ctes:
        raise Refused(f"no table {table.name!r} in the SQL tool; the views: {views}")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool  # more rows than the limit: the first ones are here
    cut_cells: int  # cells longer than CELL_CHARS, cut


def _cell(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat(), False
    if isinstance(value, decimal.Decimal):
        return float(value), False
    if isinstance(value, bytes | memoryview):
        return f"<{len(bytes(value))} bytes>", False
    if isinstance(value, dt.timedelta):
        return value.total_seconds(), False
    if isinstance(value, list | dict):
        import orjson

        value = orjson.dumps(value, default=str).decode()
    if isinstance(value, str) and len(value) > CELL_CHARS:
        return value[:CELL_CHARS] + "…", True
    if isinstance(value, str | int | float | bool) or value is None:
        return value, False
    return str(value)[:CELL_CHARS], False


def _answer(columns: list[str], fetched: Sequence[Sequence[Any]], limit: int) -> Answer:
    rows, cut = [], 0
    for row in fetched[:limit]:
        out = []
        for value in row:
            shown, was_cut = _cell(value)
            cut += was_cut
            out.append(shown)
        rows.append(out)
    return Answer(columns, rows, len(fetched) > limit, cut)


# --- the guards -------------------------------------------------------------------------------


#: the rows of ``my_daily`` (``Reads.day_totals``), and what says they may have changed
DayRows = Iterable[tuple[str, str, str, str, str, float | None, int]]


@dataclass(frozen=True)
class Daily:
    """Where the SQL tool's ``my_daily`` comes from: made at start, made again before a
    query when ``stamp`` (the journal's summary of the account) has changed."""

    rows: Callable[[], DayRows]
    stamp: Callable[[], object]


#: the table my_daily is kept in (a table: its values come from Python's overlap rule)
_DAILY_COLUMNS = "metric, field, unit, value_is, day, value, points"
_DAILY_TABLE = (
    "(metric TEXT, field TEXT, unit TEXT, value_is TEXT, day TEXT, value DOUBLE PRECISION, "
    "points BIGINT)"
)


class Guard(Protocol):
    dialect: Dialect

    def run(self, sql: str, *, limit: int, timeout_s: float) -> Answer: ...

    def close(self) -> None: ...


_SQLITE_DENIED_FUNCTIONS = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile"}
)


class SqliteGuard:
    """The SQL tool on a SQLite journal: a read-only connection of its own."""

    dialect: Dialect = "sqlite"

    def __init__(
        self, path: str, account_id: str, expect_version: int, daily: Daily | None = None
    ) -> None:
        if not os.path.isfile(path):
            raise HealthlogError("no journal file at the journal URL's path")
        uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._deadline = 0.0
        try:
            _check_version(self._conn.execute, expect_version)
            self._journal_tables = frozenset(
                name.lower()
                for (name,) in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
            )
            for name, sql in _SQLITE.items():
                self._conn.execute(
                    f"CREATE TEMP VIEW {name} AS " + sql.format(account=_literal(account_id))
                )
            self._conn.execute(f"CREATE TEMP TABLE my_daily {_DAILY_TABLE}")
        except sqlite3.Error as exc:
            self._conn.close()
            raise HealthlogError(f"the journal cannot be read ({type(exc).__name__})") from None
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_BYTES)
        self._daily = daily
        self._stamp: object = None
        self._conn.set_authorizer(self._authorize)
        self._conn.set_progress_handler(self._past_deadline, 10_000)

    def _fresh_daily(self) -> None:
        """``my_daily`` made again where the journal changed (the authorizer set aside
        for our own statements, the user's query not yet run)."""
        if self._daily is None or (stamp := self._daily.stamp()) == self._stamp:
            return
        rows = list(self._daily.rows())
        self._conn.set_authorizer(None)
        try:
            self._conn.execute("BEGIN")
            self._conn.execute("DELETE FROM temp.my_daily")
            self._conn.executemany(
                f"INSERT INTO temp.my_daily ({_DAILY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._conn.execute("COMMIT")
        finally:
            self._conn.set_authorizer(self._authorize)
        self._stamp = stamp

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, view: str | None
    ) -> int:
        if action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            if db == "temp" and arg1 in VIEWS:
                return sqlite3.SQLITE_OK
            if db == "main" and view in VIEWS:  # a journal table, read by one of our views
                return sqlite3.SQLITE_OK
            if db is None:
                # a common table expression reading itself (or another): no table of
                # any database. SQLite names no database for a read of no column of a
                # table either (``SELECT count(*) FROM point_rows``): a name of the
                # journal's is never a CTE's here, so that read is denied
                named = (arg1 or "").lower()
                return sqlite3.SQLITE_DENY if named in self._journal_tables else sqlite3.SQLITE_OK
            if db == "main" and arg1 in _COLUMNLESS and not arg2:
                # SQLite names no view for a join of my_points whose columns the query
                # does not use: a read of no column, no value
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return (
                sqlite3.SQLITE_DENY
                if (arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS
                else sqlite3.SQLITE_OK
            )
        if action == sqlite3.SQLITE_RECURSIVE:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def run(self, sql: str, *, limit: int, timeout_s: float) -> Answer:
        check(sql, "sqlite")
        with self._lock:
            self._fresh_daily()
            self._deadline = time.monotonic() + timeout_s
            # the progress handler is checked between opcodes; a timer interrupts one
            # that runs long all the same (sqlite3_interrupt is safe from any thread)
            alarm = threading.Timer(timeout_s, self._conn.interrupt)
            alarm.daemon = True
            alarm.start()
            try:
                cursor = self._conn.execute(sql)
                try:
                    fetched = cursor.fetchmany(limit + 1)
                finally:
                    cursor.close()
            except sqlite3.OperationalError as exc:
                if "interrupted" in str(exc):
                    raise Refused(_timeout(timeout_s)) from None
                raise Refused(f"SQLite refused the query: {_first_line(exc)}") from None
            except sqlite3.DataError as exc:  # a value past VALUE_BYTES
                raise Refused(
                    f"SQLite refused the query: {_first_line(exc)} (a value may be at most "
                    f"{VALUE_BYTES // (1024 * 1024)} MB)"
                ) from None
            except sqlite3.Error as exc:
                raise Refused(f"SQLite refused the query: {_first_line(exc)}") from None
            finally:
                alarm.cancel()
            columns = [d[0] for d in cursor.description or ()]
        return _answer(columns, fetched, limit)

    def close(self) -> None:
        self._conn.close()


class PostgresGuard:
    """The SQL tool on a PostgreSQL journal: a session of the account's reader role.

    Privilege, not only parsing: the journal's connection makes (idempotently) a schema
    and a login role of the account's own (``reader_name``), the views in that schema
    (``security_barrier``, each bound to the account by a literal), grants the role
    ``SELECT`` on those views alone and gives it a new random password; the tool's
    session then logs in *as that role*. Its session user is the reader, so no function
    that runs text (``ts_stat``, ``query_to_xml``), no attribute notation (``x.fn``),
    no ``set_config('role', ...)`` reaches a base table or another account's rows:
    PostgreSQL refuses them for want of a grant. The role's transactions are read-only,
    with a statement timeout; after each query its advisory locks are released and any
    large object it made is removed. The journal's role needs ``CREATEROLE`` (the
    database's owner or a superuser has it); without it the tool says so and runs
    nothing.
    """

    dialect: Dialect = "postgres"

    def __init__(
        self, url: str, account_id: str, expect_version: int, daily: Daily | None = None
    ) -> None:
        import psycopg

        self._psycopg = psycopg
        self._lock = threading.Lock()
        self._url, self._daily, self._stamp = url, daily, cast(object, None)
        name = reader_name(account_id)
        self._schema = name
        password = secrets.token_urlsafe(32)
        try:
            with psycopg.connect(url, connect_timeout=10, autocommit=True) as owner:
                _check_version(owner.execute, expect_version)
                _make_reader(owner, name, password, account_id)
        except psycopg.errors.InsufficientPrivilege:
            raise HealthlogError(
                "the SQL tool needs its own PostgreSQL role, and the journal's role may not "
                "create one: grant it CREATEROLE (ALTER ROLE ... CREATEROLE), or use the "
                "other tools"
            ) from None
        except psycopg.Error as exc:
            raise HealthlogError(f"the journal cannot be read ({type(exc).__name__})") from None
        params = psycopg.conninfo.conninfo_to_dict(url)
        params.update(user=name, password=password, connect_timeout=10)
        try:
            self._conn = psycopg.connect(**params, autocommit=False)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise HealthlogError(
                f"the SQL tool's role cannot sign in to the journal ({type(exc).__name__}): "
                "allow it in pg_hba.conf like the journal's own role"
            ) from None

    def run(self, sql: str, *, limit: int, timeout_s: float) -> Answer:
        check(sql, "postgres")
        psycopg = self._psycopg
        with self._lock:
            self._fresh_daily()
            try:
                with self._conn.transaction():
                    self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    ms = max(1, int(timeout_s * 1000))
                    self._conn.execute(f"SET LOCAL statement_timeout = {ms}")
                    with self._conn.cursor(name="hl_sql_tool") as cursor:
                        cursor.execute(sql.encode())
                        fetched = cursor.fetchmany(limit + 1)
                        columns = [d.name for d in cursor.description or ()]
            except psycopg.errors.QueryCanceled:
                raise Refused(_timeout(timeout_s)) from None
            except psycopg.Error as exc:
                what = f"{type(exc).__name__}, SQLSTATE {exc.sqlstate or '-'}"
                detail = exc.diag.message_primary or ""
                raise Refused(f"PostgreSQL refused the query ({what}): {detail[:200]}") from None
            finally:
                self._tidy()
        return _answer(columns, fetched, limit)

    def _fresh_daily(self) -> None:
        """``my_daily`` made again, by the journal's role, where the journal changed."""
        if self._daily is None or (stamp := self._daily.stamp()) == self._stamp:
            return
        from psycopg import sql as pgsql

        rows = list(self._daily.rows())
        table = pgsql.Identifier(self._schema, "my_daily")
        try:
            with self._psycopg.connect(self._url, connect_timeout=10) as owner:
                owner.execute(pgsql.SQL("DELETE FROM {}").format(table))
                with owner.cursor() as cursor:
                    cursor.executemany(
                        pgsql.SQL(
                            "INSERT INTO {} (" + _DAILY_COLUMNS + ") VALUES "
                            "(%s, %s, %s, %s, %s, %s, %s)"
                        ).format(table),
                        rows,
                    )
        except self._psycopg.Error as exc:
            raise Refused(f"my_daily could not be made ({type(exc).__name__})") from None
        self._stamp = stamp

    def _tidy(self) -> None:
        """What a query may leave behind in the role's session: its advisory locks (the
        fold's among them) and large objects; none outlives the query."""
        try:
            with self._conn.transaction():
                self._conn.execute("SET TRANSACTION READ WRITE")
                self._conn.execute("SELECT pg_advisory_unlock_all()")
                self._conn.execute(
                    "SELECT lo_unlink(oid) FROM pg_largeobject_metadata "
                    "WHERE lomowner = current_user::regrole"
                )
        except self._psycopg.Error:
            self._conn.close()  # a session that cannot be tidied is not used again
            raise Refused("the SQL tool's session ended; start the MCP server again") from None

    def close(self) -> None:
        self._conn.close()


def reader_name(account_id: str) -> str:
    """The account's reader role and schema on PostgreSQL (the id's hash: no value)."""
    return "healthlog_sql_" + hashlib.sha256(account_id.encode()).hexdigest()[:20]


def _make_reader(owner: Any, name: str, password: str, account_id: str) -> None:
    """The reader role, its schema and views, as the journal's role (autocommit)."""
    import psycopg
    from psycopg import sql as pgsql

    role = pgsql.Identifier(name)
    account = pgsql.Literal(account_id).as_string(owner)
    if owner.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is None:
        with contextlib.suppress(psycopg.errors.DuplicateObject):  # made meanwhile
            owner.execute(pgsql.SQL("CREATE ROLE {} NOINHERIT").format(role))
    owner.execute(
        pgsql.SQL(
            "ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
            "NOBYPASSRLS CONNECTION LIMIT 16 PASSWORD {}"
        ).format(role, pgsql.Literal(password))
    )
    for setting in (
        "default_transaction_read_only = on",
        "statement_timeout = '60s'",
        "idle_in_transaction_session_timeout = '60s'",
        "search_path = {schema}, pg_catalog",
        "TimeZone = 'UTC'",
    ):
        owner.execute(
            pgsql.SQL("ALTER ROLE {} SET " + setting.replace("{schema}", "{}")).format(
                role, *([role] if "{schema}" in setting else [])
            )
        )
    with owner.transaction():
        owner.execute(pgsql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(role))
        owner.execute(pgsql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(role))
        for view, text in _POSTGRES.items():
            body = text.format(account=account)
            owner.execute(
                pgsql.SQL("CREATE OR REPLACE VIEW {}.{} WITH (security_barrier) AS ")
                .format(role, pgsql.Identifier(view))
                .as_string(owner)
                .encode()
                + body.encode()
            )
        owner.execute(
            pgsql.SQL("CREATE TABLE IF NOT EXISTS {}.my_daily " + _DAILY_TABLE).format(role)
        )
        owner.execute(pgsql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(role, role))
        owner.execute(pgsql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(role, role))


def _check_version(execute: Callable[[str], Any], expect: int) -> None:
    found = execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    if found != expect:
        raise HealthlogError(
            f"the journal's schema is at version {found}, this healthlog reads {expect}: "
            "run any other healthlog command once (it migrates), then start again"
        )


def _timeout(timeout_s: float) -> str:
    return (
        f"the query ran past the time limit ({timeout_s:g} s) and was stopped: narrow it "
        "(a range of start, one metric, an aggregate instead of rows)"
    )


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
