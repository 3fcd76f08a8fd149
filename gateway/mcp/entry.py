"""The way in to ``/mcp``, straight from the outer middlewares.

Every other route goes through FastAPI's exception handlers, its exit stack and the router; an MCP
call needs none of them (``gateway.auth`` answers its own refusals, the SDK turns every failure into
a JSON-RPC error) and would keep their per-request objects (about 3 KiB) for as long as it waits,
which is minutes for each of thousands of waiting calls. So ``POST`` and ``DELETE`` on exactly
``/mcp`` are handed to the endpoint here, after the body limit (the SDK checks the host); anything else
(a ``GET``, a trailing slash) goes the usual way and gets the router's answer.

Any other ``POST`` (a form's answer, the inbox's, a platform's callback) marks the process busy with
answers, so waiting calls' progress ticks give it the loop (``gateway.core.hush``).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.core import hush

MCP_PATH = "/mcp"
"""Where MCP is served (streamable HTTP)."""

MCP_METHODS = frozenset({"POST", "DELETE"})
"""The methods ``/mcp`` answers (no ``GET``: humangate never sends on a standalone stream)."""


class McpEntry:
    """ASGI middleware: ``POST``/``DELETE`` on ``/mcp`` go to ``endpoint``, the rest to ``app``."""

    def __init__(self, app: ASGIApp, endpoint: ASGIApp) -> None:
        self.app = app
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["path"] == MCP_PATH and scope["method"] in MCP_METHODS:
                await self.endpoint(scope, receive, send)
                return
            if scope["method"] == "POST":
                hush.PROCESS.busy()
        await self.app(scope, receive, send)
