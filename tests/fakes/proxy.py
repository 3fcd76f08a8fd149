"""A recording reverse proxy on loopback: a client talks to a real server through it, and the test
reads what the client sent (``tests.fakes.server.FakeServer`` records every request). Responses are
passed on as they stream (a long MCP call's progress reaches the client as it is sent)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.responses import Response, StreamingResponse

from tests.fakes.server import WAIT, Call, FakeServer

HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}
"""Headers that belong to one connection, never passed on."""


def recording_proxy(upstream: str) -> FakeServer:
    """A server (not started) that passes every request on to ``upstream`` and records it."""

    async def forward(call: Call) -> Response:
        client = httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None))
        headers = {k: v for k, v in call.headers.items() if k not in HOP_BY_HOP}
        request = client.build_request(
            call.method, upstream + call.path, params=call.query, headers=headers, content=call.body
        )
        response = await client.send(request, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.aiter_raw():
                    yield chunk
            finally:
                await response.aclose()
                await client.aclose()

        passed: dict[str, Any] = {k: v for k, v in response.headers.items() if k.lower() not in HOP_BY_HOP}
        return StreamingResponse(body(), status_code=response.status_code, headers=passed)

    return FakeServer(forward)
