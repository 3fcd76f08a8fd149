"""Every body posted to ``/mcp`` read once, within bounds, before the SDK sees it.

The SDK parses bodies itself, and each era differently: 2026-07-28 with ``json``, 2025-11-25 with
``pydantic_core``, which refuses a lone surrogate (``"\\ud800"``, valid JSON) as a parse error, and
humangate's own reply check ran ``json`` unguarded (3,000 ``[`` were a 500). So a body is read here
with ``schemas.json_text.read_json`` first: one that is not JSON within bounds gets a JSON-RPC
``Parse error`` (400) naming the rule, in both eras. A ``tools/call`` whose arguments hold lone
surrogates goes on with them replaced by U+FFFD (so the SDK of either era reads it) while the tool
is handed the arguments as sent (``arguments_of``), so it names the argument as it names any other
broken rule; a lone surrogate anywhere else is a ``Parse error`` naming where it is.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types import PARSE_ERROR, CallToolRequestParams, ErrorData, JSONRPCError
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.limits import replay
from schemas.errors import InvalidJsonError
from schemas.json_text import read_json
from schemas.text import INVALID_TEXT, invalid_text_path, valid_text

ARGUMENTS_STATE_KEY = "humangate_tool_arguments"
"""Where the arguments of a ``tools/call`` whose text was made valid for the SDK are kept, as sent."""


def _parse_error(detail: str) -> Response:
    error = ErrorData(code=PARSE_ERROR, message=f"Parse error: {detail}")
    body = JSONRPCError(jsonrpc="2.0", id=None, error=error)
    text = body.model_dump_json(by_alias=True, exclude_unset=True)
    return Response(text, 400, media_type="application/json")


def _valid(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings and keys replaced by U+FFFD."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(str(key)): _valid(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_valid(child) for child in value]
    return value


def arguments_of(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> dict[str, Any] | None:
    """The arguments of this ``tools/call`` as the client sent them."""
    if ctx.request is not None:
        sent: dict[str, Any] | None = getattr(ctx.request.state, ARGUMENTS_STATE_KEY, None)
        if sent is not None:
            return sent
    return params.arguments


class McpBodies:
    """ASGI wrapper of the MCP endpoint: reads a POST's body within bounds (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        # What is read and decoded here is dropped before the call goes on: a waiting call lasts
        # minutes, and the SDK keeps its own parse of the body.
        body = await _read_body(receive)
        if body is None:  # the client went away
            return
        checked = _checked(scope, body)
        del body
        if isinstance(checked, Response):
            await checked(scope, receive, send)
            return
        replayed = replay({"type": "http.request", "body": checked, "more_body": False}, receive)
        del checked
        await self.app(scope, replayed, send)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body of the request, or ``None`` if the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _checked(scope: Scope, body: bytes) -> bytes | Response:
    """The body the SDK is handed (with lone surrogates in a tool's arguments replaced, those
    arguments as sent kept in the request's state), or the ``Parse error`` response."""
    try:
        decoded = read_json(body)
    except InvalidJsonError as exc:
        return _parse_error(str(exc))
    if invalid_text_path(decoded) is None:
        return body
    arguments = _tool_arguments(decoded)
    if arguments is not None:
        decoded["params"]["arguments"] = _valid(arguments)
    elsewhere = invalid_text_path(decoded)
    if elsewhere is not None:
        return _parse_error(f"{elsewhere or 'body'}: {INVALID_TEXT}")
    scope.setdefault("state", {})[ARGUMENTS_STATE_KEY] = arguments
    return json.dumps(decoded, ensure_ascii=False).encode()


def _tool_arguments(message: Any) -> dict[str, Any] | None:
    """The arguments of a ``tools/call`` request, if ``message`` is one with an object of them."""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("arguments"), dict):
        return None
    arguments: dict[str, Any] = params["arguments"]
    return arguments
