"""``healthlog mcp``: an MCP server over one account's showcase (docs/mcp.md).

It builds the server on the official ``mcp`` SDK, registers each tool of
``healthlog.mcp.metrics``, ``.sections`` and ``.sql`` (plain functions over a
``ToolContext``) under its name, sets up the log, and runs on stdio by default or
streamable HTTP on 127.0.0.1 with ``--http``. The journal is a ``ShowcaseReads``: no
tool can reach a write.

No answer is longer than ``MAX_CHARS`` characters. A bad argument is an MCP error
result (``isError``) that names the problem and the nearest valid choice, never a
traceback. Nothing of the data is logged: the SDK's own log (and uvicorn's) is set to
warnings, each line once as healthlog's JSON line, and an unexpected failure is logged
by its type only.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from healthlog import log, reads
from healthlog.config import Settings
from healthlog.errors import HealthlogError, needs_extra
from healthlog.journal import guard as sql_guard
from healthlog.journal.port import ShowcaseReads
from healthlog.reads import heavy

try:  # the extra's parts: pydantic and pydantic_core come with mcp
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails
except ImportError:  # the tools' modules need them at import (below)
    raise HealthlogError(needs_extra("healthlog mcp", "mcp")) from None

# after the extra's check, so that its absence is said in one line: the tools'
# arguments are annotated with pydantic's Field
from healthlog.mcp import metrics, sections, sql
from healthlog.mcp.arguments import Tool, ToolContext

logger = logging.getLogger("healthlog.mcp")

#: no answer is longer than this, in characters of compact JSON
MAX_CHARS = 60_000
DEFAULT_PORT = 8765
#: the tools, in the order clients list them
TOOLS: tuple[Tool[...], ...] = (
    metrics.catalog,
    metrics.metric_series,
    metrics.daily_summary,
    sections.sleep_nights,
    sections.workouts,
    sections.workout,
    sections.records,
    metrics.coverage,
    sql.sql,
)

# --- the server ---------------------------------------------------------------------------

#: what an argument takes, by the kind of pydantic's refusal (the rest: pydantic's words)
_TAKES = {
    "missing": "required",
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "text",
    "list_type": "a list",
}


class _Server(MCPServer[Any]):
    """MCPServer whose refusal of an argument's kind is one plain sentence per argument
    (its name, what it takes, what came), like the tools' own: not pydantic's text.
    ``heavy`` is the gate its heavy tools run through (``healthlog.reads.heavy``)."""

    heavy: heavy.Gate

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            refused = exc.__cause__
            # a crash inside a tool (UnexpectedToolError) stays one, whatever raised it:
            # logged as an error, its values never sent to the client
            if isinstance(exc, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise
            schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
            properties = schema.get("properties", {})
            errors = refused.errors()
            if not all(e["loc"] and str(e["loc"][0]) in properties for e in errors):
                raise  # not the arguments' own check
            said = "; ".join(_plain(e, properties) for e in errors)
            raise ToolError(f"Error executing tool {name}: {said}") from refused


def _plain(error: ErrorDetails, properties: dict[str, Any]) -> str:
    """One of pydantic's errors as ``argument: what it takes (got what came)``."""
    where = [str(part) for part in error["loc"]]
    argument = where[0] + "".join(f"[{part}]" for part in where[1:])
    described = properties.get(where[0], {})
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("literal_error", "enum"):
        values = _allowed(described)
        listed = f"{', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else "".join(values)
        takes = f"one of {listed}" if values else error["msg"]
    elif kind in ("too_short", "too_long"):
        most = kind == "too_long"
        count = ctx["max_length" if most else "min_length"]
        takes = f"at {'most' if most else 'least'} {count} item{'s' if count != 1 else ''}"
    else:
        takes = _TAKES.get(kind, error["msg"][:1].lower() + error["msg"][1:])
    if len(where) == 1 and "description" in described and kind not in ("literal_error", "enum"):
        takes += f": {described['description']}"
    if kind == "missing":
        return f"{argument}: {takes}"
    got = ctx["actual_length"] if kind in ("too_short", "too_long") else error["input"]
    return f"{argument}: {takes} (got {log.truncate(repr(got), 60)})"


def _allowed(described: dict[str, Any]) -> list[str]:
    """The values an argument's JSON schema lists (its ``enum``, maybe inside ``anyOf``)."""
    found: list[str] = [str(v) for v in described.get("enum", ())]
    for option in described.get("anyOf", ()):
        found += _allowed(option)
    return found


class _WithoutHeaderValue(logging.Filter):
    """The SDK's refusal of a request's Host or Origin, without the header's value."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = record.getMessage().split(": ", 1)[0], None
        return True


_WITHOUT_HEADER_VALUE = _WithoutHeaderValue()
#: the loggers that have a JSON handler of their own (``_log_once``)
_OWN_HANDLERS = ("healthlog", "mcp", "uvicorn")


class _NotOurs(logging.Filter):
    """A record of another library's logger (the others print at their own handler),
    cut to its message's first line and without its arguments: a library's text may
    quote what it choked on (asyncio's "Task exception was never retrieved" goes on with
    the exception's repr), and the exception's type is all a line keeps of it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.partition(".")[0] in _OWN_HANDLERS:
            return False
        record.msg, record.args = str(record.msg).split("\n", 1)[0], None
        return True


_NOT_OURS = _NotOurs()


def _log_once() -> None:
    """Each log line once, as healthlog's JSON line.

    MCPServer calls ``logging.basicConfig``, which gives the root logger a plain handler
    when it has none, and healthlog's lines propagate there: each would be printed a
    second time. A root handler of healthlog's own makes that call do nothing: it prints
    what other libraries (asyncio, anyio, psycopg) warn of as JSON lines, as Python's
    last-resort handler would have printed it, and leaves the lines of the loggers that
    have their handler below to that handler. The SDK's own lines and uvicorn's are
    healthlog's JSON lines too, at WARNING and up (their INFO and DEBUG lines may quote
    requests), or at healthlog's level if higher; the SDK's refusal of a Host or Origin
    header says which, not the value.
    """
    level = max(logging.WARNING, logging.getLogger("healthlog").getEffectiveLevel())
    root = logging.getLogger()
    if not root.handlers:
        others = log.json_handler()
        others.setLevel(level)
        others.addFilter(_NOT_OURS)
        root.addHandler(others)
    for name in _OWN_HANDLERS[1:]:
        log.setup(logging.getLevelName(level), name=name)
    logging.getLogger("mcp.server.transport_security").addFilter(_WITHOUT_HEADER_VALUE)


def build(r: reads.Reads, guard: sql_guard.Guard) -> _Server:
    """The MCPServer with every tool, over ``r``'s account and ``guard``'s views."""
    _log_once()
    server = _Server(
        "healthlog",
        instructions=(
            "Apple Health data of one person, as received from the Health Auto Export app "
            "and kept by healthlog. Start with `catalog` to see the metrics, their units and "
            "extent; prefer summarised reads (metric_series at day/week/month, "
            "daily_summary) to raw points. Times are ISO 8601 with offsets."
        ),
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    ctx = ToolContext(r, guard, heavy.Gate())
    server.heavy = ctx.gate
    for tool in TOOLS:
        server.add_tool(
            _registered(tool, ctx),
            name=tool.__name__,
            description=sql.sql_description(guard) if tool is sql.sql else _described(tool),
            annotations=read_only,
        )
    return server


def _registered(tool: Tool[...], ctx: ToolContext) -> Callable[..., CallToolResult]:
    """``tool`` as the SDK takes it: its name, its arguments but the context (the
    schema clients see is made from them), its answer sent by ``_answer``."""
    signature = inspect.signature(tool, eval_str=True)
    arguments = list(signature.parameters.values())[1:]

    def call(**given: Any) -> CallToolResult:
        return _answer(lambda: tool(ctx, **given))

    call.__name__ = tool.__name__
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=arguments, return_annotation=CallToolResult
    )
    call.__annotations__ = {a.name: a.annotation for a in arguments} | {"return": CallToolResult}
    return call


def _described(tool: Tool[...]) -> str:
    """``tool``'s docstring as clients have always been sent it: its lines after the first
    indented 4 spaces more, as when each tool was a closure inside ``build`` (a Python
    that strips a docstring's indentation, 3.13 on, stripped theirs too)."""
    return (tool.__doc__ or "").replace("\n    ", "\n        ")


def _answer(work: Callable[[], dict[str, Any]]) -> CallToolResult:
    """``work``'s answer as the tool's result: a refusal of ours as its message, any other
    failure by its type only, an answer over ``MAX_CHARS`` refused."""
    try:
        data = work()
    except HealthlogError as exc:  # the messages of these name no value of the data
        raise ToolError(str(exc)) from None
    except Exception as exc:
        log.event(logger, logging.ERROR, "mcp.tool_failed", error=type(exc).__name__)
        raise ToolError(f"the read failed ({type(exc).__name__}); try again") from None
    text = orjson.dumps(data).decode()
    if len(text) > MAX_CHARS:
        raise ToolError(
            f"the answer would be {len(text)} characters, more than {MAX_CHARS}: lower "
            "limit, narrow the range, or ask for a coarser resolution"
        )
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


# --- opening and running ------------------------------------------------------------------------


def open_readonly(settings: Settings) -> ShowcaseReads:
    """The journal for reading: not migrated (that would write), not created if missing."""
    import os

    from healthlog import urls
    from healthlog.ops import wiring

    location = urls.journal_location(settings.journal_url)
    if isinstance(location, urls.SqliteLocation) and not os.path.isfile(location.path):
        raise HealthlogError(
            "no journal file at the journal URL's path (HEALTHLOG_JOURNAL_URL): nothing to read"
        )
    return wiring.open_journal(settings)


def open_guard(r: reads.Reads) -> sql_guard.Guard:
    """The SQL tool's session over ``r``'s account, its ``my_daily`` from ``r``: the
    journal opens it (``ShowcaseReads.guarded_session``)."""
    return r.journal.guarded_session(r.account.id, sql_guard.Daily(r.day_totals, r.status))


def refuse_off_loopback(http: bool, host: str) -> None:
    """HealthlogError unless the server would listen on this machine only."""
    from healthlog.local.launcher import is_loopback

    if http and not is_loopback(host):
        raise HealthlogError(
            f"--host {host}: the MCP server listens on loopback only (127.0.0.1, ::1); to "
            "reach it from another machine, forward the port over SSH"
        )


@contextlib.contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """A socket listening on ``host``:``port``; PortTaken (exit 1) if another has it."""
    from healthlog.local import launcher, stack

    try:
        sock = launcher.listening_socket(host, port)
    except launcher.PortTaken as taken:
        raise stack.port_taken_at(taken.host, taken.port, "--port") from None
    with sock:
        yield sock


async def _serve_http(server: MCPServer[Any], sock: socket.socket, host: str, port: int) -> None:
    """Streamable HTTP on ``sock`` until stopped, checking each request's Host and Origin."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    app = server.streamable_http_app(transport_security=security, host=host)
    # uvicorn's loggers as they are (_log_once), not its plain handlers of their own
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=None)
    await uvicorn.Server(config).serve(sockets=[sock])


def serve(
    r: reads.Reads,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    on_ready: Callable[[str], None] | None = None,
) -> int:
    """Serve the tools over stdio, or streamable HTTP on a loopback address, until stopped."""
    refuse_off_loopback(http, host)
    guard = open_guard(r)
    try:
        server = build(r, guard)
        log.event(logger, logging.INFO, "mcp.started", transport="http" if http else "stdio")
        if not http:
            server.run("stdio")
            return 0
        with _listening(host, port) as sock:  # bound before the URL is announced
            if on_ready is not None:
                on_ready(f"http://{'[::1]' if ':' in host else host}:{port}/mcp")
            import anyio

            anyio.run(_serve_http, server, sock, host, port)
        return 0
    finally:
        guard.close()
        log.event(logger, logging.INFO, "mcp.stopped")
