"""Request body size limits, enforced before any handler reads the body."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 256 * 1024
"""Largest request body accepted anywhere (a 64 KiB schema and 8 KiB message fit with room)."""


class BodySizeLimit:
    """ASGI middleware: 413 when Content-Length or the streamed body exceeds ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and (not value.isdigit() or int(value) > self.max_bytes):
                await _refuse(send, self.max_bytes)
                return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except BodyTooLarge:
            await _refuse(send, self.max_bytes)


class BodyTooLarge(Exception):
    """Raised inside the app when a streamed body passes the limit."""


async def _refuse(send: Send, max_bytes: int) -> None:
    body = (
        f'{{"error":"RequestTooLarge","detail":"request body: must be at most {max_bytes} bytes"}}'.encode()
    )
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
