"""The official MCP client over streamable HTTP, as the tests use it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.dispatcher import ProgressFnT

Era = Literal["legacy", "2026-07-28"]
"""``legacy`` speaks 2025-11-25 (initialize handshake, sessions); the other needs no handshake."""

ERAS: tuple[Era, ...] = ("legacy", "2026-07-28")

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""The headers of a raw JSON-RPC POST to ``/mcp`` (a test that speaks below the SDK)."""
INITIALIZE: dict[str, object] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""A raw 2025-11-25 ``initialize`` request: it opens a session."""


@dataclass
class Progress:
    """Every progress notification a call received, in order."""

    events: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append((progress, total, message))


async def call_elicit(
    base_url: str,
    arguments: dict[str, Any],
    *,
    api_key: str | None = None,
    era: Era = "legacy",
    on_progress: ProgressFnT | None = None,
    tool: str = "elicit",
) -> types.CallToolResult:
    """Call ``elicit`` (or another ``tool``) on a gateway at ``base_url`` and wait for its result."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=era) as client,
    ):
        return await client.call_tool(tool, arguments, progress_callback=on_progress)


async def list_tools(base_url: str, *, era: Era = "legacy") -> list[types.Tool]:
    async with (
        create_mcp_http_client() as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=era) as client,
    ):
        return list((await client.list_tools()).tools)


def text_of(result: types.CallToolResult) -> str:
    """The single text content of a tool result."""
    assert len(result.content) == 1
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text
