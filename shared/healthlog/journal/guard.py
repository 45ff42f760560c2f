"""The policy of the MCP server's ``sql`` tool: what a query may do, and its limits.

A query sees only the views of ``VIEWS`` (docs/mcp.md lists their columns), each filtered
to the account, never ``accounts``, token hashes, headers or another account's rows. It
is refused unless it is one ``SELECT`` (or ``WITH ... SELECT``), and it runs with a row
limit and a time limit. Several layers, each enough on its own for what it covers:

1. ``check`` (here): sqlglot parses the text in the backend's dialect. One statement, a
   query, no data-changing node anywhere (a ``DELETE`` in a ``WITH``, ``SELECT ...
   INTO``), and every table it reads, scope by scope, one of the views (a CTE of the
   same query is the query's own). On PostgreSQL, functions sqlglot does not know as
   standard SQL must be on ``PG_FUNCTIONS`` (so no ``pg_read_file``, ``dblink``,
   ``set_config``, ``query_to_xml``, ``pg_sleep``, large objects...).
2. The session, which the journal opens (``ShowcaseReads.guarded_session``; its views
   are named statements of each dialect's SQL file, ``guarded_<view>``). SQLite
   (``journal.sqlite.SqliteGuard``): the file opened read-only (``mode=ro``), the views
   ``TEMP``, an authorizer that allows a ``SELECT``, the reading of a view, of the
   journal's tables only *through* a view, and functions but ``SQLITE_DENIED_FUNCTIONS``
   (one gap, which layer 1 closes: SQLite names no view for a read of *no column* of
   ``series`` or ``point_rows``, which ``my_points`` joins, so such a read is allowed;
   alone it would let a query count every account's series and points, never read a
   value); ``ATTACH`` limited to 0 databases, values to ``VALUE_BYTES``; a progress
   handler and a timer stop a query past its time. PostgreSQL
   (``journal.postgres.PostgresGuard``): a session signed in as the account's own
   reader role (``reader_name``), which may read the account's views and nothing else,
   each query in a ``READ ONLY`` transaction with ``statement_timeout``, rows read
   through a server-side cursor; the parser also refuses attribute notation (``x.fn``).
3. The answer (``answer``, here): at most ``limit`` rows, each cell at most
   ``CELL_CHARS`` characters.

Error messages name the rule a query broke and never quote a value of the data.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from healthlog.errors import HealthlogError

#: a backend's name, which is sqlglot's for its SQL: ``check`` parses in it, and adds the
#: checks of SQLite (printf widths) and PostgreSQL (the function allowlist, attribute
#: notation) to the common ones; another backend's session (layer 2) holds alone as each
#: of these does
Dialect = str

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
    #: (column, what it holds); each dialect's SQL file has its SQL, ``guarded_<name>``
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

#: the one of ``VIEWS`` that is a table of the session's, filled from the reads (its
#: values come from the overlap rule, in Python); the others are views of the journal
DAILY = "my_daily"

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


def answer(columns: list[str], fetched: Sequence[Sequence[Any]], limit: int) -> Answer:
    rows, cut = [], 0
    for row in fetched[:limit]:
        out = []
        for value in row:
            shown, was_cut = _cell(value)
            cut += was_cut
            out.append(shown)
        rows.append(out)
    return Answer(columns, rows, len(fetched) > limit, cut)


# --- the sessions ---------------------------------------------------------------------------


#: the rows of ``my_daily`` (``Reads.day_totals``), and what says they may have changed
DayRows = Iterable[tuple[str, str, str, str, str, float | None, int]]


@dataclass(frozen=True)
class Daily:
    """Where the SQL tool's ``my_daily`` comes from: made at start, made again before a
    query when ``stamp`` (the journal's summary of the account) has changed."""

    rows: Callable[[], DayRows]
    stamp: Callable[[], object]


class Guard(Protocol):
    """A guarded session: what ``ShowcaseReads.guarded_session`` opens. ``run`` checks
    the query (``check``) before the database sees it, and answers with ``answer``."""

    dialect: Dialect

    def run(self, sql: str, *, limit: int, timeout_s: float) -> Answer: ...

    def close(self) -> None: ...


#: SQLite functions a query may not call, whatever layer 1 says (the session's authorizer
#: denies them by name): extensions, the file functions of the CLI and its extensions
SQLITE_DENIED_FUNCTIONS = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile"}
)


def reader_name(account_id: str) -> str:
    """The account's reader role and schema on PostgreSQL (the id's hash: no value)."""
    return "healthlog_sql_" + hashlib.sha256(account_id.encode()).hexdigest()[:20]


def literal(text: str) -> str:
    """``text`` as a quoted SQL literal: the account id a view is bound by (views take
    no parameters); the id is the journal's own, a UUID."""
    return "'" + text.replace("'", "''") + "'"


def timed_out(timeout_s: float) -> Refused:
    """What a session raises for a query it stopped at ``timeout_s``."""
    return Refused(
        f"the query ran past the time limit ({timeout_s:g} s) and was stopped: narrow it "
        "(a range of start, one metric, an aggregate instead of rows)"
    )


def first_line(exc: Exception) -> str:
    """The first line of a database's message (at most 200 characters), for a refusal."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
