"""The web form in a real headless Chromium, answered as a person would, checked through MCP."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import Browser, expect

from tests.browser import browser, new_page
from tests.conftest import StartGateway
from tests.gateway.flows import start_call
from tests.mcp_client import text_of

__all__ = ["browser"]  # the fixture, imported for pytest

pytestmark = pytest.mark.browser

EVERY_TYPE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2, "maxLength": 20},
        "email": {"type": "string", "format": "email", "title": "Email"},
        "site": {"type": "string", "format": "uri", "title": "Website"},
        "day": {"type": "string", "format": "date", "title": "Day"},
        "at": {"type": "string", "format": "date-time", "title": "Start at"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Count"},
        "ratio": {"type": "number", "title": "Ratio"},
        "agree": {"type": "boolean", "title": "Agree"},
        "skip": {"type": "boolean", "title": "Skip it"},
        "size": {
            "type": "string",
            "title": "Size",
            "oneOf": [
                {"const": "s", "title": "Small"},
                {"const": "m", "title": "Medium"},
                {"const": "l", "title": "Large"},
            ],
        },
        "region": {
            "type": "string",
            "title": "Region",
            "oneOf": [{"const": f"r{i}", "title": f"Region number {i}"} for i in range(7)],
        },
        "tier": {"type": "string", "title": "Tier", "enum": ["g", "p"], "enumNames": ["Gold", "Platinum"]},
        "parts": {
            "type": "array",
            "title": "Parts",
            "items": {"type": "string", "enum": ["api", "web", "db"]},
            "minItems": 1,
        },
        "code": {"type": "string", "title": "Code", "pattern": "^[A-Z]{3}$"},
        "note": {"type": "string", "title": "Note", "default": "hello"},
    },
    "required": ["name", "email", "size", "region", "parts"],
}

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "Approved"}}}

SMALL = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Count"},
    },
    "required": ["email"],
}


async def test_every_field_type_is_filled_and_submitted(
    start_gateway: StartGateway, browser: Browser
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Tell me everything", "schema": EVERY_TYPE, "uiType": "web"})
    watched = await new_page(browser)
    page = watched.page
    await page.goto(await call.form_url())
    await expect(page.get_by_label("Note")).to_have_value("hello")  # the default is pre-filled
    await expect(page.get_by_label("Region")).to_have_count(1)
    assert await page.locator("#hg-form option").all_inner_texts() == [
        "Choose one…",
        *[f"Region number {i}" for i in range(7)],
    ]
    await page.get_by_label("Name").fill("Ada")
    await page.get_by_label("Email").fill("ada@example.com")
    await page.get_by_label("Website").fill("https://example.com/x")
    await page.get_by_label("Day").fill("2026-11-22")
    await page.get_by_label("Start at").fill("2026-11-22T10:30")
    await page.get_by_label("Count").fill("3")
    await page.get_by_label("Ratio").fill("2.5")
    await page.get_by_label("Agree").check()
    await page.get_by_label("Medium", exact=True).check()
    await page.get_by_label("Region").select_option(label="Region number 4")
    await page.get_by_label("Platinum", exact=True).check()
    await page.get_by_label("api", exact=True).check()
    await page.get_by_label("db", exact=True).check()
    await page.get_by_label("Code").fill("ABC")
    await page.get_by_role("button", name="Submit").click()
    await expect(page.locator("body")).to_contain_text("Your answer was recorded")
    result = await call.result()
    assert text_of(result) == (
        'User provided: {"name":"Ada","email":"ada@example.com","site":"https://example.com/x",'
        '"day":"2026-11-22","at":"2026-11-22T10:30:00Z","count":3,"ratio":2.5,"agree":true,"skip":false,'
        '"size":"m","region":"r4","tier":"p","parts":["api","db"],"code":"ABC","note":"hello"}'
    )
    await expect(page.locator("body")).to_contain_text("Region number 4")  # read-only, with titles
    assert await page.locator("#hg-form").count() == 0
    assert watched.console_errors == [] and await watched.csp_violations() == []


async def test_decline_with_a_reason_and_cancel_without_one(
    start_gateway: StartGateway, browser: Browser
) -> None:
    gateway = start_gateway()
    declined = start_call(gateway.url, {"message": "Share it?", "schema": APPROVAL, "uiType": "web"})
    page = (await new_page(browser)).page
    await page.goto(await declined.form_url())
    await page.get_by_text("Decline or cancel, with a reason").click()
    await page.get_by_label("Reason (optional)").fill("Not comfortable sharing this")
    await page.get_by_role("button", name="Decline").click()
    await expect(page.locator("body")).to_contain_text("Not comfortable sharing this")
    assert text_of(await declined.result()) == "User declined: Not comfortable sharing this"

    canceled = start_call(gateway.url, {"message": "Wrong person?", "schema": APPROVAL, "uiType": "web"})
    await page.goto(await canceled.form_url())
    await page.get_by_text("Decline or cancel, with a reason").click()
    await page.get_by_role("button", name="Cancel").click()
    await expect(page.locator("body")).to_contain_text("Your answer was recorded")
    result = await canceled.result()
    assert text_of(result) == "User canceled: No reason given"
    assert result.is_error


async def test_server_side_errors_are_shown_inline_and_keep_what_was_typed(
    start_gateway: StartGateway, browser: Browser
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Contact?", "schema": SMALL, "uiType": "web"})
    page = (await new_page(browser)).page
    await page.goto(await call.form_url())
    await page.evaluate("document.getElementById('hg-form').noValidate = true")  # skip the browser's checks
    await page.get_by_label("Email").fill("not-an-email")
    await page.get_by_label("Count").fill("42")
    await page.get_by_role("button", name="Submit").click()
    email_field = page.locator('[data-field="email"]')
    await expect(email_field.locator(".error")).to_contain_text("valid email")
    await expect(page.locator('[data-field="count"] .error')).to_contain_text("at most 10")
    await expect(page.get_by_label("Email")).to_have_attribute("aria-invalid", "true")
    await expect(page.get_by_label("Email")).to_have_value("not-an-email")
    await expect(page.get_by_label("Count")).to_have_value("42")
    await expect(page.locator("#hg-errors")).to_be_visible()
    await page.get_by_label("Email").fill("ada@example.com")
    await page.get_by_label("Count").fill("7")
    await page.get_by_role("button", name="Submit").click()
    assert text_of(await call.result()) == 'User provided: {"email":"ada@example.com","count":7}'


async def test_the_agents_message_is_text_and_nothing_runs(
    start_gateway: StartGateway, browser: Browser
) -> None:
    gateway = start_gateway()
    message = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    call = start_call(gateway.url, {"message": message, "schema": APPROVAL, "uiType": "web"})
    watched = await new_page(browser)
    page = watched.page
    response = await page.goto(await call.form_url())
    assert response is not None and response.status == 200
    await expect(page.locator("#hg-message")).to_have_text(message)
    assert await page.evaluate("typeof window.pwned") == "undefined"
    assert await page.locator("#hg-message img, #hg-message script").count() == 0
    assert watched.console_errors == [] and await watched.csp_violations() == []
    headers = response.headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "'nonce-" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"
    call.task.cancel()


async def test_a_cross_site_post_is_refused_and_a_get_records_nothing(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "CSRF?", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    hf_id = form.rsplit("/", 1)[1].split(".")[0]
    async with httpx.AsyncClient() as client:
        for headers in (
            {"Origin": "https://evil.example"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": "null"},
        ):
            refused = await client.post(
                form, data={"hg-action": "accept", "f.approved": "true"}, headers=headers
            )
            assert refused.status_code == 403
        for _ in range(3):
            assert (await client.get(form)).status_code == 200
        state = await client.get(f"{gateway.url}/v1/requests/{hf_id}")
    assert state.json()["status"] == "pending"
    call.task.cancel()


async def test_the_countdown_runs_and_an_expired_form_is_closed(
    start_gateway: StartGateway, browser: Browser
) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="3", HUMANGATE_POLL_INTERVAL="0.5")
    call = start_call(gateway.url, {"message": "Quick!", "schema": APPROVAL, "uiType": "web"})
    page = (await new_page(browser)).page
    await page.goto(await call.form_url())
    countdown = page.locator("#hg-countdown")
    first = await countdown.inner_text()
    await expect(countdown).not_to_have_text(first, timeout=5000)
    await expect(page.get_by_role("button", name="Submit")).to_be_disabled(timeout=10000)
    await expect(countdown).to_contain_text("expired")
    assert text_of(await call.result()) == "User canceled: Request timed out after 3 seconds"
    await page.reload()
    await expect(page.locator("body")).to_contain_text("expired")
    assert await page.locator("#hg-form").count() == 0


async def test_the_form_works_without_javascript(start_gateway: StartGateway, browser: Browser) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "No JS?", "schema": APPROVAL, "uiType": "web"})
    page = (await new_page(browser, javascript=False)).page
    await page.goto(await call.form_url())
    await page.get_by_label("Approved").check()
    await page.get_by_role("button", name="Submit").click()
    await expect(page.locator("body")).to_contain_text("Your answer was recorded")
    assert text_of(await call.result()) == 'User provided: {"approved":true}'


async def test_an_unknown_link_says_so(start_gateway: StartGateway, browser: Browser) -> None:
    gateway = start_gateway()
    page = (await new_page(browser)).page
    response = await page.goto(f"{gateway.url}/f/0123456789abcdef.not-the-secret")
    assert response is not None and response.status == 404
    await expect(page.locator("body")).to_contain_text("not valid")
