"""The inline form app (MCP Apps) in headless Chromium: read with ``resources/read`` by the
official Python SDK client, shown in a small host page of the tests that speaks the Apps postMessage
protocol, answered through ``answer_request`` against a real gateway, checked by the exact result of
the ``elicit`` call it sits beside. See docs/tools.md#the-inline-form."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from playwright.async_api import FrameLocator, expect

from tests.browser import OpenPage, Watched
from tests.channels.markdown_cases import RICH
from tests.conftest import StartGateway
from tests.gateway.flows import start_call
from tests.mcp_client import call_elicit, text_of

pytestmark = pytest.mark.browser

HOST_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>test host</title></head><body>
<iframe id="app" sandbox="allow-scripts" title="humangate form" style="width:640px;height:900px"></iframe>
<script>
const frame = document.getElementById("app");
window.seen = [];
const post = (message) => frame.contentWindow.postMessage({jsonrpc: "2.0", ...message}, "*");
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const msg = event.data;
  window.seen.push(msg.method === "tools/call" ? `tools/call ${msg.params.name}` : msg.method || "response");
  if (msg.method === "ui/initialize") {
    post({id: msg.id, result: {protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"},
      hostCapabilities: {serverTools: {}}, hostContext: {theme: "dark",
      styles: {variables: {"--color-background-primary": "rgb(1, 2, 3)"}}}}});
  } else if (msg.method === "ui/notifications/initialized") {
    post({method: "ui/notifications/tool-input", params: {arguments: window.toolArguments}});
  } else if (msg.method === "tools/call") {
    post({id: msg.id, result: await window.hgCallTool(msg.params)});
  }
});
window.start = (html, args) => { window.toolArguments = args; frame.srcdoc = html; };
window.sendToolResult = (result) => post({method: "ui/notifications/tool-result", params: result});
</script></body></html>"""

EVERY_TYPE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "maxLength": 50},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean", "title": "OK?"},
        "env": {"type": "string", "enum": ["dev", "prod"]},
        "size": {
            "type": "string",
            "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
        },
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
    },
    "required": ["name", "ok"],
}
HOSTILE = 'Deploy <img src=x onerror="window.top.pwned=1"> v2?'


@asynccontextmanager
async def hosted(
    open_page: OpenPage, url: str, arguments: dict[str, Any]
) -> AsyncIterator[tuple[Watched, FrameLocator]]:
    """The app from ``resources/read``, in the test host, answering through one SDK client."""
    async with (
        create_mcp_http_client() as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client,
    ):
        resource = await client.read_resource("ui://humangate/form.html")
        [content] = resource.contents
        assert content.mime_type == "text/html;profile=mcp-app"
        html = getattr(content, "text", "")
        assert "<script" in html and "http://" not in html and "https://" not in html  # no external loads

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(params["name"], params["arguments"])
            return result.model_dump(by_alias=True, mode="json", exclude_none=True)

        watched = await open_page()
        await watched.page.expose_function("hgCallTool", call_tool)
        await watched.page.set_content(HOST_PAGE)
        await watched.page.evaluate("([html, args]) => window.start(html, args)", [html, arguments])
        yield watched, watched.page.frame_locator("#app")


async def test_every_field_type_answered_in_the_app_gives_the_exact_result(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    arguments = {"message": HOSTILE, "schema": EVERY_TYPE, "uiType": "web"}
    call = start_call(gateway.url, arguments)
    await call.wait_for_progress()
    async with hosted(open_page, gateway.url, arguments) as (watched, app):
        await expect(app.locator("#message")).to_have_text(HOSTILE)  # agent text is text, never HTML
        assert await app.locator("img").count() == 0
        assert (
            await app.locator("body").evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(1, 2, 3)"
        )
        await app.get_by_label("Name *").fill("Ada")
        await app.get_by_label("email").fill("ada@example.com")
        await app.get_by_label("site").fill("https://example.com/x")
        await app.get_by_label("day").fill("2026-11-22")
        await app.get_by_label("at", exact=True).fill("2026-11-22T10:30")
        await app.get_by_label("count").fill("11")
        await app.get_by_label("ratio").fill("2.5")
        await app.get_by_role("radiogroup", name="OK? *").get_by_role("radio", name="Yes").click()
        await app.get_by_role("radio", name="prod").click()
        await app.get_by_role("radio", name="Large").click()
        await app.get_by_role("checkbox", name="a").click()
        await app.get_by_role("checkbox", name="c").click()
        await app.get_by_role("button", name="Submit").click()
        # Outside the schema: the field says why, and the form stays open to fix it.
        await expect(app.locator("#f-5-error")).to_have_text("must be at most 10")
        await expect(app.get_by_label("count")).to_have_attribute("aria-invalid", "true")
        await app.get_by_label("count").fill("3")
        await app.get_by_role("button", name="Submit").click()
        result = await call.result()
        assert text_of(result) == (
            'User provided: {"name":"Ada","email":"ada@example.com","site":"https://example.com/x",'
            '"day":"2026-11-22","at":"2026-11-22T10:30:00Z","count":3,"ratio":2.5,"ok":true,'
            '"env":"prod","size":"l","tags":["a","c"]}'
        )
        await expect(app.locator("#status")).to_have_text("Answered. The agent has your answer.")
        for control in await app.locator("button, input, textarea").all():
            await expect(control).to_be_disabled()  # greyed, still readable in the chat
        await watched.page.evaluate(
            "r => window.sendToolResult(r)", result.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
        assert await watched.page.evaluate("window.pwned") is None
        assert await watched.problems() == []


@pytest.mark.parametrize(
    ("schema", "clicks", "expected"),
    [
        (
            {"type": "object", "properties": {"env": {"type": "string", "enum": ["dev", "prod"]}}},
            [("radio", "prod")],
            'User provided: {"env":"prod"}',
        ),
        (
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            [("radio", "No")],
            'User provided: {"ok":false}',
        ),
        (
            {"type": "object", "properties": {"note": {"type": "string"}}},
            [("button", "Decline"), ("reason", "not today"), ("button", "Decline now")],
            "User declined: not today",
        ),
        (
            {"type": "object", "properties": {"note": {"type": "string"}}},
            [("button", "Cancel")],
            "User canceled: No reason given",
        ),
    ],
)
async def test_quick_choices_decline_and_cancel_in_one_click(
    start_gateway: StartGateway,
    open_page: OpenPage,
    schema: dict[str, Any],
    clicks: list[tuple[str, str]],
    expected: str,
) -> None:
    gateway = start_gateway()
    arguments = {"message": "Which one?", "schema": schema, "uiType": "web"}
    call = start_call(gateway.url, arguments)
    await call.wait_for_progress()
    async with hosted(open_page, gateway.url, arguments) as (watched, app):
        for role, name in clicks:
            if role == "reason":
                await app.get_by_label("Reason (optional)").fill(name)
            else:
                await app.get_by_role(role, name=name, exact=True).click()  # type: ignore[arg-type]
        result = await call.result()
        assert text_of(result) == expected
        assert result.structured_content is not None
        await expect(app.locator("#status")).not_to_be_empty()
        assert json.dumps(await watched.page.evaluate("window.seen")).count("tools/call answer_request") == 1
        assert await watched.problems() == []


async def test_the_app_shows_the_message_as_the_servers_cleaned_html(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    message = RICH + "\n\n[click me](javascript:alert(1)) <script>window.top.pwned=1</script>"
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    arguments = {"message": message, "schema": schema, "uiType": "web"}
    call = start_call(gateway.url, arguments)
    await call.wait_for_progress()
    async with hosted(open_page, gateway.url, arguments) as (watched, app):
        shown = app.locator("#message")
        await expect(shown).to_have_class(re.compile(r"\brendered\b"))  # show_message's HTML is in
        await expect(shown.locator("h4 strong")).to_have_text("v2.1")
        await expect(shown.locator("li code").first).to_have_text("payments")
        assert await shown.locator("ul > li").count() == 3 and await shown.locator("ol > li").count() == 2
        assert await shown.locator("table th").all_inner_texts() == ["service", "cost", "owner"]
        await expect(shown.locator("pre.hg-diff .hg-added")).to_have_text("+replicas: 4")
        assert await shown.locator("script, img, iframe, [style]").count() == 0
        assert await shown.locator("[href^='javascript:' i]").count() == 0
        await expect(shown).to_contain_text("[click me](javascript:alert(1))")
        await expect(shown).to_contain_text("<script>window.top.pwned=1</script>")
        assert "tools/call show_message" in await watched.page.evaluate("window.seen")
        await app.get_by_role("radio", name="Yes").click()
        assert text_of(await call.result()) == 'User provided: {"ok":true}'
        assert await watched.page.evaluate("window.pwned") is None
        assert await watched.problems() == []


async def test_show_message_renders_only_a_message_within_the_limit(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    shown = await call_elicit(gateway.url, {"message": "**hi** <b>x</b>"}, tool="show_message")
    assert not shown.is_error and text_of(shown) == "hi <b>x</b>"
    assert shown.structured_content == {"html": "<p><strong>hi</strong> &lt;b&gt;x&lt;/b&gt;</p>"}
    wrong = await call_elicit(gateway.url, {"message": "x", "schema": {}}, tool="show_message")
    assert wrong.is_error and text_of(wrong) == "Invalid arguments: unknown argument(s): schema"
    big = await call_elicit(gateway.url, {"message": "x" * (32 * 1024 + 1)}, tool="show_message")
    assert big.is_error and text_of(big) == "Invalid arguments: message: must be at most 32768 bytes"
