"""Body limits per path (real gateway): 64 KiB on webhooks and form posts, refused with 413 before
any parsing or signature check, chunked bodies included; /mcp and /v1 take a whole 64 KiB schema."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.limits import (
    BODY_LIMITS,
    FORM_BODY_BYTES,
    MAX_BODY_BYTES,
    MCP_BODY_BYTES,
    WEBHOOK_BODY_BYTES,
    body_limit,
)
from tests.conftest import StartGateway
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.gateway.flows import start_call
from tests.mcp_client import text_of

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
WAIT = 30.0
SIGNATURE_REFUSALS = ("refused a Slack request", "refused an interaction channel=discord")


def test_each_webhook_and_the_form_have_their_line_in_the_table() -> None:
    assert body_limit("/slack/events") == WEBHOOK_BODY_BYTES == 64 * 1024
    assert body_limit("/discord/interactions") == WEBHOOK_BODY_BYTES
    assert body_limit("/teams/messages") == WEBHOOK_BODY_BYTES
    assert body_limit("/f/0123456789abcdef.secret") == FORM_BODY_BYTES == 64 * 1024
    assert body_limit("/v1/requests") == MAX_BODY_BYTES
    assert body_limit("/mcp") == MCP_BODY_BYTES > 1024 * 1024
    assert body_limit("/slack/events/more") == MAX_BODY_BYTES  # exact paths are exact
    assert body_limit("/new/hook", {**BODY_LIMITS, "/new/hook": 10}) == 10  # one line adds a webhook


async def chunks(body: bytes, size: int = 8192) -> AsyncIterator[bytes]:
    """The body as a chunked upload (no Content-Length)."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def assert_too_large(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 413, (response.status_code, response.text[:200])
    assert response.json() == {
        "error": "RequestTooLarge",
        "detail": f"request body: must be at most {limit} bytes",
    }


async def test_webhooks_and_forms_refuse_a_large_body_before_any_check(
    start_gateway: StartGateway, slack: FakeSlack, discord: FakeDiscord
) -> None:
    gateway = start_gateway(**slack.env(), **discord.env())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        created = await client.post(
            "/v1/requests", json={"message": "Big?", "schema": APPROVAL, "uiType": "web"}
        )
        form = created.json()["form_url"].removeprefix(gateway.url)
        paths = ["/slack/events", "/discord/interactions", "/teams/messages", form]
        over = b"x" * (64 * 1024 + 1)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        for path in paths:
            assert_too_large(await client.post(path, content=over, headers=headers), 64 * 1024)
            chunked = await client.post(path, content=chunks(over), headers=headers)
            assert "content-length" not in chunked.request.headers
            assert_too_large(chunked, 64 * 1024)
        assert not any(line in gateway.output() for line in SIGNATURE_REFUSALS)
        # At the limit, the same requests reach their handlers, which check the signature.
        at_limit = b"x" * (64 * 1024)
        assert (await client.post("/slack/events", content=at_limit, headers=headers)).status_code == 401
        assert (await client.post("/discord/interactions", content=chunks(at_limit))).status_code == 401
        assert (await client.get(f"/v1/requests/{created.json()['id']}")).json()["status"] == "pending"
    assert all(line in gateway.output() for line in SIGNATURE_REFUSALS)


async def test_a_person_who_posts_too_much_gets_a_readable_page(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(timeout=WAIT) as client:
        created = await client.post(
            f"{gateway.url}/v1/requests", json={"message": "Essay?", "schema": APPROVAL, "uiType": "web"}
        )
        page = await client.post(
            created.json()["form_url"],
            data={"hg-action": "accept", "f.approved": "x" * 70_000},
            headers={"Accept": "text/html,application/xhtml+xml"},
        )
    assert page.status_code == 413
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "<h1>Your answer is too long.</h1>" in page.text
    assert "larger than the 64 KiB this form accepts" in page.text


def big_request() -> dict[str, Any]:
    """A schema of exactly 64 KiB as compact JSON and a message of exactly 32 KiB (docs/schemas.md#limits)."""
    schema: dict[str, Any] = {"type": "object", "description": "", "properties": APPROVAL["properties"]}
    size = len(json.dumps(schema, separators=(",", ":")).encode())
    schema["description"] = "d" * (64 * 1024 - size)
    assert len(json.dumps(schema, separators=(",", ":")).encode()) == 64 * 1024
    return {"message": "m" * 32768, "schema": schema, "uiType": "web"}


async def test_rest_and_mcp_take_a_64_kib_schema_and_a_32_kib_message(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    request = big_request()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        created = await client.post("/v1/requests", json=request)
        assert created.status_code == 201, created.text
        chunked = await client.post(
            "/v1/requests",
            content=chunks(json.dumps(request | {"message": "chunked " + "m" * 32760}).encode()),
            headers={"Content-Type": "application/json"},
        )
        assert chunked.status_code == 201, chunked.text
        call = start_call(gateway.url, request | {"message": "over MCP " + "m" * 32759})
        form = await call.form_url()
        declined = await client.post(form, data={"hg-action": "decline", "hg-reason": "too long"})
        assert declined.status_code == 303
    assert text_of(await call.result()) == "User declined: too long"


@pytest.mark.parametrize("path", ["/v1/requests", "/mcp"])
async def test_rest_and_mcp_refuse_more_than_their_limit(start_gateway: StartGateway, path: str) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        limit = MCP_BODY_BYTES if path == "/mcp" else MAX_BODY_BYTES
        over = b"{" + b" " * limit + b"}"
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        assert_too_large(await client.post(path, content=over, headers=headers), limit)
        assert_too_large(await client.post(path, content=chunks(over), headers=headers), limit)
