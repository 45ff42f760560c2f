"""The MCP SQL tool: one guarded SELECT over the account's views, and its description.

What a query may do is ``healthlog.journal.guard``'s policy; the session it runs in is
the journal's (``ShowcaseReads.guarded_session``), in the ``ToolContext``. Its
description names the journal's dialect, so it is made for the session
(``sql_description``), not read from a docstring.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from healthlog.journal import guard as sql_guard
from healthlog.mcp.arguments import BadArgument, ToolContext, heavy_read, within


def sql_description(guard: sql_guard.Guard) -> str:
    """The SQL tool's description: its rules, in ``guard``'s dialect, and the views."""
    return (
        f"Guarded read-only SQL ({guard.dialect}) for what the other tools cannot answer: "
        "one SELECT (WITH allowed), over these views of this account's data only, with a "
        "row and a time limit; writes, a second statement, ATTACH, PRAGMA and any other "
        "table are refused. Units are in the unit column; times in start/end are UTC; "
        "my_points.local_start is the phone's local time.\n" + sql_guard.describe()
    )


@heavy_read
def sql(
    ctx: ToolContext,
    query: Annotated[str, Field(description="one SELECT over the views below")],
    limit: Annotated[int, Field(description="most rows, 1 to 1000")] = 200,
    timeout_s: Annotated[float, Field(description="time limit, 0.1 to 30 seconds")] = 5.0,
) -> dict[str, Any]:
    """One guarded SELECT over the account's views (clients read ``sql_description``)."""
    top = within("limit", limit, 1000)
    if not 0.1 <= timeout_s <= 30:
        raise BadArgument(f"timeout_s: between 0.1 and 30 (got {timeout_s})")
    found = ctx.guard.run(query, limit=top, timeout_s=timeout_s)
    out: dict[str, Any] = {
        "dialect": ctx.guard.dialect,
        "columns": found.columns,
        "rows": found.rows,
        "truncated": found.truncated,
    }
    if found.truncated:
        out["note"] = (
            f"only the first {top} rows are here: aggregate (GROUP BY), add a WHERE "
            "on start, or raise limit (at most 1000)"
        )
    if found.cut_cells:
        out["cells_cut"] = (
            f"{found.cut_cells} values longer than {sql_guard.CELL_CHARS} characters "
            "were cut; select a part of them (substr, json_extract / ->>)"
        )
    return out
