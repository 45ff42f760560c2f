"""The MCP interface: ``healthlog mcp``, one account's showcase for an assistant.

``server`` builds the server and runs it on stdio or streamable HTTP (docs/mcp.md); the
tools are plain functions of ``metrics``, ``sections`` and ``sql``, each over the
``arguments.ToolContext`` it is given.
"""
