"""Request body size limits, enforced before routing, parsing or any signature check.

Each path gets its limit from ``BODY_LIMITS`` (platform callbacks and form posts are small: each
channel's endpoints say theirs, read from ``channels.registry``; the inbox's are here) or
``MAX_BODY_BYTES`` (``/v1``, which carries a whole schema; ``/mcp`` takes ``MCP_BODY_BYTES``, for a
permission prompt's input). A declared
``Content-Length`` over the limit is refused at once (the server never reads past a declared
length); a body without one (chunked) is read here up to the limit and refused the moment it passes
it, so no handler ever holds more than its limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from channels.base import FORM_BODY_BYTES, WEBHOOK_BODY_BYTES
from channels.pages import new_nonce, page_headers, render_too_large_page
from channels.registry import body_limits
from gateway.errors import too_large_body

__all__ = [
    "BODY_LIMITS",
    "FORM_BODY_BYTES",
    "MAX_BODY_BYTES",
    "MCP_BODY_BYTES",
    "WEBHOOK_BODY_BYTES",
    "BodySizeLimit",
    "body_limit",
]

MAX_BODY_BYTES = 256 * 1024
"""Largest request body of ``/mcp`` and ``/v1`` (a 64 KiB schema and a 32 KiB message fit, escaped)."""

MCP_BODY_BYTES = 1024 * 1024 + 64 * 1024
"""Largest request body of ``/mcp``: a permission prompt's tool input of 1 MiB (docs/permissions.md)
fits with its JSON-RPC envelope. ``/v1`` keeps ``MAX_BODY_BYTES``."""

INBOX_LIMITS: Mapping[str, int] = {"/inbox": FORM_BODY_BYTES, "/inbox/": FORM_BODY_BYTES}
"""The operators' inbox posts answers like the web form."""


def current_limits() -> dict[str, int]:
    """Body limit per path: every registered channel's endpoints, then the inbox's. A key ending in
    ``/`` covers every path under it; a new channel's endpoints bring their own."""
    return {**body_limits(), **INBOX_LIMITS, "/mcp": MCP_BODY_BYTES}


BODY_LIMITS: Mapping[str, int] = current_limits()
"""The limits of the channels registered when this module was imported."""


def body_limit(path: str, limits: Mapping[str, int] = BODY_LIMITS, default: int = MAX_BODY_BYTES) -> int:
    """The largest body accepted on ``path``."""
    for prefix, max_bytes in limits.items():
        if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
            return max_bytes
    return default


class BodySizeLimit:
    """ASGI middleware: 413 when a body is larger than its path's limit (``body_limit``)."""

    def __init__(
        self, app: ASGIApp, limits: Mapping[str, int] = BODY_LIMITS, default: int = MAX_BODY_BYTES
    ) -> None:
        self.app = app
        self.limits = limits
        self.default = default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = body_limit(scope["path"], self.limits, self.default)
        length = next((value for name, value in scope["headers"] if name == b"content-length"), None)
        if length is not None:
            if not length.isdigit() or int(length) > max_bytes:
                await _drain(receive)
                await _refuse(scope, send, max_bytes)
                return
            # The server reads exactly Content-Length bytes (HTTP/1.1 framing), so no more can come.
            await self.app(scope, receive, send)
            return
        # No Content-Length (chunked): read the body here, so it is cut off at the limit before any
        # handler (or signature check) sees a byte of it; the app then gets it as one message.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                await self.app(scope, replay(message, receive), send)
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > max_bytes:
                if message.get("more_body", False):
                    await _drain(receive, seen)
                await _refuse(scope, send, max_bytes)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, replay(body, receive), send)


DRAIN_BYTES = 4 * 1024 * 1024
"""Bytes of a refused body read and dropped before the 413 (no handler sees them), so that a client
still sending it (an HTTP/1.1 client sends its whole body before it reads) gets the answer instead
of a reset connection; past this the 413 is sent at once and the connection closed."""


async def _drain(receive: Receive, seen: int = 0) -> None:
    while seen <= DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        seen += len(message.get("body", b""))


def replay(first: Message, receive: Receive) -> Receive:
    """A ``receive`` that returns ``first`` once, then whatever the server sends (a disconnect)."""
    pending: list[Message] = [first]

    async def replayed() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replayed


def _wants_html(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"accept":
            return b"text/html" in value
    return False


async def _refuse(scope: Scope, send: Send, max_bytes: int) -> None:
    """413, as a page for a browser (a person who pasted too much) and as humangate's JSON error body
    for everyone else."""
    if _wants_html(scope):
        nonce = new_nonce()
        body = render_too_large_page(nonce, max_bytes).encode()
        headers = [(k.lower().encode(), v.encode()) for k, v in page_headers(nonce).items()]
        headers.append((b"content-type", b"text/html; charset=utf-8"))
    else:
        body = json.dumps(too_large_body(max_bytes)).encode()
        headers = [(b"content-type", b"application/json")]
    headers += [(b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
