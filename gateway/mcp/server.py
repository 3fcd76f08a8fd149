"""The SDK's low-level ``Server`` and its streamable-HTTP session manager (SSE responses, stateful
sessions for 2025-11-25, handshake-free 2026-07-28 on the same endpoint), serving ``TOOLS``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from gateway.callers import ANONYMOUS_CALLER, CALLER_STATE_KEY, Caller
from gateway.limits import MAX_BODY_BYTES
from gateway.mcp.asking import Call
from gateway.mcp.sessions import LOCAL_IDLE_TIMEOUT, SharedSessionManager
from gateway.mcp.tools import TOOLS
from gateway.runtime import Runtime
from schemas.settings import Settings

logger = logging.getLogger(__name__)

MAX_SESSIONS = 10_000
"""Most concurrent MCP sessions one process keeps (each waiting call needs at most one)."""

RuntimeGetter = Callable[[], Runtime]


def caller_of(ctx: ServerRequestContext[Any]) -> Caller:
    """Who makes this MCP request (set by ``gateway.auth.CallerAuth``)."""
    if ctx.request is None:
        return ANONYMOUS_CALLER
    caller: Caller = getattr(ctx.request.state, CALLER_STATE_KEY, ANONYMOUS_CALLER)
    return caller


def build_mcp(get_runtime: RuntimeGetter, settings: Settings) -> SharedSessionManager:
    """The MCP server and its session manager (to run in the app's lifespan; give it its registry
    once Redis is connected)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[entry.definition for entry in TOOLS.values()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        entry = TOOLS.get(params.name)
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return await entry.handle(Call(get_runtime(), caller_of(ctx), ctx), params.arguments)

    def input_schema(name: str) -> dict[str, Any] | None:
        # Without this, the SDK runs the whole tools/list handler on every 2026-07-28 call to find
        # the schema it checks Mcp-Param-* headers against (an eighth of the gateway's CPU).
        entry = TOOLS.get(name)
        return None if entry is None else entry.definition.input_schema

    server: Server[Any] = Server(
        "humangate",
        version="0.1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )
    return SharedSessionManager(
        app=server,
        json_response=False,
        stateless=False,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts(settings),
            allowed_origins=allowed_origins(settings),
        ),
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=LOCAL_IDLE_TIMEOUT,
        max_sessions=MAX_SESSIONS,
    )


LOCAL_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
"""Loopback forms always allowed in the Host header (with or without a port)."""


def allowed_hosts(settings: Settings) -> list[str]:
    """``HUMANGATE_ALLOWED_HOSTS``, else the public URL's host plus the localhost forms."""
    if settings.allowed_hosts:
        return list(settings.allowed_hosts)
    return [settings.public_host, *LOCAL_HOSTS]


def allowed_origins(settings: Settings) -> list[str]:
    """Browser origins allowed to call ``/mcp``: the allowed hosts over http and https."""
    return [f"{scheme}://{host}" for host in allowed_hosts(settings) for scheme in ("http", "https")]
