"""No body gets a 5xx: every route that reads JSON (MCP in both eras, with and without a session,
REST, the Slack, Discord and Teams callbacks, signed as each platform signs) refuses deep nesting,
huge numbers and other encodings with a 4xx naming the rule; lone surrogates in a tool's
arguments are named by the tool in both eras (real gateway, raw HTTP: the official client cannot
encode a lone surrogate)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from gateway.mcp.bodies import McpBodies
from schemas.json_text import NOT_UTF8
from tests.conftest import GatewayProcess, StartGateway
from tests.fakes import discord_interactions, slack_callbacks, teams_activities
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.teams import FakeTeams
from tests.mcp_client import INITIALIZE, MCP_HEADERS

MODERN = MCP_HEADERS | {"MCP-Protocol-Version": "2026-07-28"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

HOSTILE: dict[str, tuple[bytes, str]] = {
    "deep nesting": (b"[" * 3000, "is nested deeper than 64 levels"),
    "deep objects": (b'{"a":' * 3000, "is nested deeper than 64 levels"),
    "a 5,000-digit integer": (b'{"id": ' + b"9" * 5000 + b"}", "has a number of more than 100 characters"),
    "an infinite float": (b'{"id": 1e999}', "has a number too large to represent (1e999)"),
    "NaN": (b'{"id": NaN}', "has NaN, which is not JSON"),
    "latin-1": ('{"id": "é"}'.encode("latin-1"), "must be JSON text in UTF-8"),
    "UTF-16": ('{"id": 1}'.encode("utf-16"), "must be JSON text in UTF-8"),
}
"""Bodies that are not JSON within bounds, and the rule each breaks."""


async def open_session(client: httpx.AsyncClient, gateway: GatewayProcess) -> str:
    response = await client.post(f"{gateway.url}/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    session_id: str = response.headers["mcp-session-id"]
    return session_id


def legacy(session_id: str) -> dict[str, str]:
    return MCP_HEADERS | {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}


@pytest.fixture
def platforms_gateway(
    start_gateway: StartGateway, slack: FakeSlack, discord: FakeDiscord, teams: FakeTeams
) -> GatewayProcess:
    return start_gateway(**slack.env(), **discord.env(), **teams.env())


async def test_no_body_gets_a_5xx_on_any_route_in_either_era(
    platforms_gateway: GatewayProcess, teams: FakeTeams
) -> None:
    gateway = platforms_gateway
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
        session_id = await open_session(client, gateway)
        for kind, (body, rule) in HOSTILE.items():
            for era, headers in (("2025-11-25", legacy(session_id)), ("none", MCP_HEADERS), ("2026", MODERN)):
                mcp = await client.post("/mcp", content=body, headers=headers)
                assert mcp.status_code == 400, (kind, era, mcp.text)
                assert mcp.json()["error"] == {"code": -32700, "message": f"Parse error: body: {rule}"}
            rest = await client.post(
                "/v1/requests", content=body, headers={"Content-Type": "application/json"}
            )
            assert rest.status_code == 422, (kind, rest.text)
            assert rest.json()["violations"] == [{"path": "body", "rule": rule}]
            slack = await slack_callbacks.send(
                gateway.url,
                {},
                body=body,
                headers=slack_callbacks.sign(body) | {"Content-Type": "application/json"},
            )
            if rule == NOT_UTF8:  # Slack signs text: a body that is not UTF-8 cannot carry its signature
                assert slack.status_code == 401 and slack.text.startswith("Unauthorized: "), kind
            else:
                assert slack.status_code == 400 and slack.text == f"Bad request: the payload {rule}", kind
            discord = await discord_interactions.send(gateway.url, body)
            assert discord.status_code == 400 and discord.json()["detail"] == f"body: {rule}", kind
            from_teams = await teams_activities.send(gateway.url, teams, body, token=teams.sign({}))
            assert from_teams.status_code == 401, kind
            assert rule in from_teams.json()["detail"], (kind, from_teams.text)
    assert "Traceback" not in gateway.output()


def tool_call(name: str, arguments: str, *, modern: bool) -> bytes:
    """A ``tools/call`` written by hand, ``arguments`` as raw JSON text (to hold ``\\ud800``)."""
    meta = f', "_meta": {json.dumps(MODERN_META)}' if modern else ""
    return (
        f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {{"name": "{name}", '
        f'"arguments": {arguments}{meta}}}}}'
    ).encode()


def result_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result in an SSE (or JSON) response to one request."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        whole: dict[str, Any] = response.json()["result"]
        return whole
    for line in response.text.splitlines():
        if line.startswith("data: ") and '"result"' in line:
            result: dict[str, Any] = json.loads(line.removeprefix("data: "))["result"]
            return result
    raise AssertionError(response.text)


ARGUMENT_CASES = [
    (
        "elicit",
        '{"message": "a\\ud800", "schema": {"type": "object", "properties": {}}, "uiType": "web"}',
        "message: must be valid Unicode text (a lone surrogate at position 1)",
    ),
    (
        "elicit",
        '{"message": "ok", "schema": {"type": "object", "properties": {"x\\udc00": {"type": "string"}}}, '
        '"uiType": "web"}',
        "Invalid schema: properties.x\ufffd: must be valid Unicode text (it holds a lone surrogate)",
    ),
    (
        "request_human_input",
        '{"prompt": "\\udc00 which branch?", "uiType": "web"}',
        "Invalid arguments: prompt: must be valid Unicode text (it holds a lone surrogate)",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "text"), ARGUMENT_CASES)
async def test_lone_surrogates_in_arguments_are_named_in_both_eras(
    start_gateway: StartGateway, tool: str, arguments: str, text: str
) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
        session_id = await open_session(client, gateway)
        old = await client.post(
            "/mcp", content=tool_call(tool, arguments, modern=False), headers=legacy(session_id)
        )
        routing = {"Mcp-Method": "tools/call", "Mcp-Name": tool}
        new = await client.post(
            "/mcp", content=tool_call(tool, arguments, modern=True), headers=MODERN | routing
        )
    for era, response in (("2025-11-25", old), ("2026-07-28", new)):
        result = result_of(response)
        assert result["isError"] is True, (era, result)
        assert result["content"][0]["text"] == text, era
    assert "Traceback" not in gateway.output()


async def test_a_lone_surrogate_outside_a_tools_arguments_is_a_parse_error_naming_where(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway()
    opening = json.dumps(INITIALIZE).replace('"name": "t"', '"name": "t\\ud800"').encode()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as client:
        response = await client.post("/mcp", content=opening, headers=MCP_HEADERS)
    assert response.status_code == 400
    rule = "params.clientInfo.name: must be valid Unicode text (it holds a lone surrogate)"
    assert response.json()["error"] == {"code": -32700, "message": f"Parse error: {rule}"}


async def test_a_waiting_call_keeps_no_copy_of_its_body_read_by_the_check() -> None:
    """``McpBodies`` hands the body on and drops what it read and decoded: a waiting call lasts
    minutes, and its parse would be held all that time (2.6 KiB and 44 objects a call, issue 30)."""
    inside = asyncio.Event()
    release = asyncio.Event()
    received: list[Message] = []

    async def waiting_app(scope: Scope, receive: Receive, send: Send) -> None:
        received.append(await receive())
        inside.set()
        await release.wait()

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}})
    messages: list[Message] = [{"type": "http.request", "body": body.encode(), "more_body": False}]

    async def receive() -> Message:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        raise AssertionError(f"nothing is sent: {message}")

    scope: Scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
    task = asyncio.create_task(McpBodies(waiting_app)(scope, receive, send))
    await asyncio.wait_for(inside.wait(), 10)
    frame = task.get_coro().cr_frame  # type: ignore[union-attr]
    held = frame.f_locals
    release.set()
    await asyncio.wait_for(task, 10)
    assert received[0]["body"] == body.encode()
    assert sorted(held) == ["receive", "replayed", "scope", "self", "send"], sorted(held)
