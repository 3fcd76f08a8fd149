"""The one explicit table of MCP tools. Adding a tool means adding a line here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from gateway.mcp import elicit
from gateway.mcp.asking import Call

Handler = Callable[[Call, dict[str, Any] | None], Awaitable[types.CallToolResult]]


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool as ``tools/list`` shows it, and what answers its calls."""

    definition: types.Tool
    handle: Handler


TOOLS: dict[str, ToolEntry] = {
    elicit.NAME: ToolEntry(elicit.TOOL, elicit.handle),
}
"""Every tool by name, in the order ``tools/list`` shows them."""
