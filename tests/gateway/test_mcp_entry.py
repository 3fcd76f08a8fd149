"""The way in to ``/mcp`` (``gateway.mcp.entry``): straight to the endpoint, past the body limit, with
the SDK's host check, while every other method and path still gets the router's answer."""

from __future__ import annotations

import httpx
from starlette.types import Message, Receive, Scope, Send

from gateway.core import hush
from gateway.limits import MCP_BODY_BYTES
from gateway.mcp.entry import McpEntry
from tests.conftest import StartGateway
from tests.mcp_client import INITIALIZE

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_mcp_is_reached_directly_yet_checked_like_every_route(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
        opened = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert opened.status_code == 200 and opened.headers["mcp-session-id"]
        foreign = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS | {"Host": "attacker.example"})
        assert foreign.status_code == 421 and foreign.text == "Invalid Host header"  # the SDK's check
        too_big = await http.post("/mcp", content=b" " * (MCP_BODY_BYTES + 1), headers=MCP_HEADERS)
        assert too_big.status_code == 413
        # Not the MCP methods, or not exactly /mcp: the router answers as before.
        assert (await http.get("/mcp", headers=MCP_HEADERS)).status_code == 405
        assert (await http.post("/mcp/", json=INITIALIZE, headers=MCP_HEADERS)).status_code in (307, 404)
        session = opened.headers["mcp-session-id"]
        ended = await http.delete("/mcp", headers={"mcp-session-id": session})
        assert ended.status_code == 200


async def test_any_other_post_marks_the_process_busy_with_answers() -> None:
    reached: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append("app")

    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append("endpoint")

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        pass

    entry = McpEntry(app, endpoint)
    hush.PROCESS.until = 0.0
    await entry({"type": "http", "path": "/mcp", "method": "POST"}, receive, send)
    await entry({"type": "http", "path": "/f/abc", "method": "GET"}, receive, send)
    assert hush.PROCESS.left() == 0  # an MCP call or a page view is no answer
    await entry({"type": "http", "path": "/f/abc", "method": "POST"}, receive, send)
    assert hush.PROCESS.left() > 0  # a form's answer: the waiting calls' ticks wait a moment
    assert reached == ["endpoint", "app", "app"]
