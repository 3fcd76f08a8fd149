"""The web form in a real headless Chromium, answered as a person would, checked through MCP."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from tests.browser import OpenPage
from tests.conftest import StartGateway
from tests.gateway.flows import WAIT, PendingCall, start_call
from tests.mcp_client import text_of

pytestmark = pytest.mark.browser

EVERY_TYPE: dict[str, Any] = {
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

APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean", "title": "Approved"}},
}

CHECKED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "count": {"type": "integer", "minimum": 1, "maximum": 10, "title": "Count"},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$", "title": "Code"},
        "parts": {
            "type": "array",
            "title": "Parts",
            "items": {"type": "string", "enum": ["api", "web", "db"]},
            "minItems": 2,
        },
    },
    "required": ["email"],
}

UNLABELLED_CONTROLS = """() => Array.from(
  document.querySelectorAll("#hg-form input:not([type=hidden]), #hg-form select, #hg-form textarea")
).filter((control) => control.labels.length === 0).map((control) => control.outerHTML)"""
"""Every visible form control that no ``<label>`` names (an accessibility failure)."""


def hf_id_of(form_url: str) -> str:
    """The Human Function id in a form link ``.../f/<id>.<secret>``."""
    return form_url.rsplit("/", 1)[1].split(".", 1)[0]


async def withdraw(base_url: str, call: PendingCall, form_url: str) -> None:
    """End a call the test left waiting, as its agent would (REST), so no MCP task dangles."""
    async with httpx.AsyncClient(timeout=WAIT) as client:
        response = await client.delete(f"{base_url}/v1/requests/{hf_id_of(form_url)}")
    assert response.status_code == 200
    assert text_of(await call.result()) == "User canceled: Request canceled by the agent"


async def test_every_field_type_is_filled_and_submitted(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Tell me everything", "schema": EVERY_TYPE, "uiType": "web"})
    watched = await open_page()
    page = watched.page
    form_url = await call.form_url()
    await page.goto(form_url)

    assert await page.evaluate(UNLABELLED_CONTROLS) == []
    await expect(page.get_by_label("Note")).to_have_value("hello")  # the default is pre-filled
    input_types = {"Email": "email", "Website": "url", "Day": "date", "Start at": "datetime-local"}
    for label, kind in input_types.items():
        await expect(page.get_by_label(label)).to_have_attribute("type", kind)
    await expect(page.get_by_label("Count")).to_have_attribute("max", "10")
    # At most five options: radios titled by oneOf/enumNames; more: a <select> whose options are the titles.
    for title in ("Small", "Medium", "Large", "Gold", "Platinum"):
        await expect(page.get_by_role("radio", name=title, exact=True)).to_have_count(1)
    region = page.get_by_role("combobox", name="Region")
    assert await region.locator("option").all_inner_texts() == [
        "Choose one…",
        *[f"Region number {i}" for i in range(7)],
    ]
    for value in ("api", "web", "db"):
        await expect(page.get_by_role("checkbox", name=value, exact=True)).to_have_count(1)

    await page.get_by_label("Name").fill("Ada")
    await page.get_by_label("Email").fill("ada@example.com")
    await page.get_by_label("Website").fill("https://example.com/x")
    await page.get_by_label("Day").fill("2026-11-22")
    await page.get_by_label("Start at").fill("2026-11-22T10:30")
    await page.get_by_label("Count").fill("3")
    await page.get_by_label("Ratio").fill("2.5")
    await page.get_by_label("Agree").check()
    await page.get_by_label("Medium", exact=True).check()
    await region.select_option(label="Region number 4")
    await page.get_by_label("Platinum", exact=True).check()
    await page.get_by_label("api", exact=True).check()
    await page.get_by_label("db", exact=True).check()
    await page.get_by_label("Code").fill("ABC")
    await page.get_by_role("button", name="Submit").click()

    await expect(page.locator(".notice")).to_have_text("Your answer was recorded. You can close this page.")
    result = await call.result()
    expected = (
        '{"name":"Ada","email":"ada@example.com","site":"https://example.com/x",'
        '"day":"2026-11-22","at":"2026-11-22T10:30:00Z","count":3,"ratio":2.5,"agree":true,"skip":false,'
        '"size":"m","region":"r4","tier":"p","parts":["api","db"],"code":"ABC","note":"hello"}'
    )
    assert text_of(result) == f"User provided: {expected}"
    assert not result.is_error
    assert result.structured_content == {
        "action": "accept",
        "content": json.loads(expected),
        "reason": None,
        "id": hf_id_of(form_url),
        "answeredBy": {"channel": "web", "id": None, "name": "web form"},
    }
    # The read-only outcome: no form, every answer shown with its title, in the schema's order.
    assert page.url == f"{form_url}?done=1"
    await expect(page.locator("#hg-form")).to_have_count(0)
    await expect(page.locator(".outcome")).to_have_attribute("data-status", "accepted")
    assert await page.locator("dl.answers dt").all_inner_texts() == [
        p["title"] for p in EVERY_TYPE["properties"].values()
    ]
    assert await page.locator("dl.answers dd").all_inner_texts() == [
        "Ada",
        "ada@example.com",
        "https://example.com/x",
        "2026-11-22",
        "2026-11-22T10:30:00Z",
        "3",
        "2.5",
        "Yes",
        "No",
        "Medium",
        "Region number 4",
        "Platinum",
        "api, db",
        "ABC",
        "hello",
    ]
    assert await watched.problems() == []


async def test_decline_with_a_reason_and_cancel_without_one(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    page = (await open_page()).page

    declined = start_call(gateway.url, {"message": "Share it?", "schema": APPROVAL, "uiType": "web"})
    await page.goto(await declined.form_url())
    await page.get_by_text("Decline or cancel, with a reason").click()
    await page.get_by_label("Reason (optional)").fill("Not comfortable sharing this")
    await page.get_by_role("button", name="Decline").click()
    await expect(page.locator(".outcome")).to_have_attribute("data-status", "declined")
    await expect(page.locator(".reason-text")).to_have_text("Not comfortable sharing this")
    result = await declined.result()
    assert text_of(result) == "User declined: Not comfortable sharing this"
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["reason"] == "Not comfortable sharing this"

    # Decline with only blanks typed: the reason is dropped, and the agent is told there was none.
    blank = start_call(gateway.url, {"message": "And this?", "schema": APPROVAL, "uiType": "web"})
    await page.goto(await blank.form_url())
    await page.get_by_text("Decline or cancel, with a reason").click()
    await page.get_by_label("Reason (optional)").fill("   ")
    await page.get_by_role("button", name="Decline").click()
    await expect(page.locator(".reason")).to_have_text("Reason: No reason given")
    assert text_of(await blank.result()) == "User declined: No reason given"

    canceled = start_call(gateway.url, {"message": "Wrong person?", "schema": APPROVAL, "uiType": "web"})
    await page.goto(await canceled.form_url())
    await page.get_by_text("Decline or cancel, with a reason").click()
    async with page.expect_request(lambda request: request.method == "POST") as posted:
        await page.get_by_role("button", name="Cancel").click()
    # The empty textarea is sent as an empty reason, with the unchecked boolean's hidden "false".
    assert (await posted.value).post_data_json == {
        "f.approved": "false",
        "hg-reason": "",
        "hg-action": "cancel",
    }
    await expect(page.locator(".outcome")).to_have_attribute("data-status", "canceled")
    result = await canceled.result()
    assert text_of(result) == "User canceled: No reason given"
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["action"] == "cancel"


async def test_server_side_errors_are_shown_inline_and_keep_what_was_typed(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Contact?", "schema": CHECKED, "uiType": "web"})
    page = (await open_page()).page
    await page.goto(await call.form_url())
    await page.evaluate("document.getElementById('hg-form').noValidate = true")  # skip the browser's checks
    await page.get_by_label("Email").fill("not-an-email")
    await page.get_by_label("Count").fill("42")
    await page.get_by_label("Code").fill("abc")
    await page.get_by_label("web", exact=True).check()  # one of the two required choices
    async with page.expect_response(lambda response: response.request.method == "POST") as answered:
        await page.get_by_role("button", name="Submit").click()
    assert (await answered.value).status == 422

    expected_errors = {
        "email": "must be a valid email address",
        "count": "must be at most 10",
        "code": "must match the pattern ^[A-Z]{3}$",
        "parts": "choose at least 2",
    }
    for name, error in expected_errors.items():
        await expect(page.locator(f'[data-field="{name}"] .error')).to_contain_text(error)
    await expect(page.locator("#hg-errors li")).to_have_count(4)
    await expect(page.locator("#hg-errors")).to_be_focused()
    for label in ("Email", "Count", "Code"):
        await expect(page.get_by_label(label)).to_have_attribute("aria-invalid", "true")
        await expect(page.get_by_label(label)).to_have_attribute("aria-describedby", re.compile(r"-error$"))
    await expect(page.get_by_label("Email")).to_have_value("not-an-email")
    await expect(page.get_by_label("Count")).to_have_value("42")
    await expect(page.get_by_label("Code")).to_have_value("abc")
    await expect(page.get_by_label("web", exact=True)).to_be_checked()
    await expect(page.get_by_label("api", exact=True)).not_to_be_checked()

    await page.get_by_label("Email").fill("ada@example.com")
    await page.get_by_label("Count").fill("7")
    await page.get_by_label("Code").fill("ABC")
    await page.get_by_label("db", exact=True).check()
    await page.get_by_role("button", name="Submit").click()
    await expect(page.locator(".outcome")).to_have_attribute("data-status", "accepted")
    assert (
        text_of(await call.result())
        == 'User provided: {"email":"ada@example.com","count":7,"code":"ABC","parts":["web","db"]}'
    )


async def test_the_agents_message_is_text_and_nothing_runs(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    message = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    call = start_call(gateway.url, {"message": message, "schema": APPROVAL, "uiType": "web"})
    watched = await open_page()
    page = watched.page
    form_url = await call.form_url()
    response = await page.goto(form_url)
    assert response is not None and response.status == 200
    await expect(page.locator("#hg-message")).to_have_text(message)
    assert await page.locator("#hg-message :not(p)").count() == 0  # one paragraph of text
    assert await page.evaluate("typeof window.pwned") == "undefined"
    await expect(page.locator("#hg-countdown")).to_contain_text("left")  # our own nonce'd script ran
    assert await watched.problems() == []

    # The watchers and the CSP are live: an inline script without the nonce is blocked and reported.
    await page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.pwned = 3'; document.body.append(s); }"
    )
    await watched.violated.wait()
    assert watched.csp_violations == ["script-src-elem inline"]
    assert await page.evaluate("typeof window.pwned") == "undefined"

    await page.get_by_label("Approved").check()
    await page.get_by_role("button", name="Submit").click()
    await expect(page.locator(".message")).to_have_text(message)  # the ended page escapes it too
    assert await page.evaluate("typeof window.pwned") == "undefined"
    assert text_of(await call.result()) == 'User provided: {"approved":true}'


async def test_security_headers_and_cross_site_posts_are_refused(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "CSRF?", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    state_url = f"{gateway.url}/v1/requests/{hf_id_of(form)}"
    accept = {"hg-action": "accept", "f.approved": "true"}
    async with httpx.AsyncClient(timeout=WAIT) as client:
        nonces = []
        for _ in range(2):
            page = await client.get(form, params=accept)  # a GET never records, whatever it carries
            assert page.status_code == 200
            csp = page.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
            nonce = re.search(r"script-src 'nonce-([A-Za-z0-9_-]{16,})'", csp)
            assert nonce, csp
            assert f'<script nonce="{nonce.group(1)}">' in page.text
            nonces.append(nonce.group(1))
            assert page.headers["referrer-policy"] == "no-referrer"
            assert page.headers["cache-control"] == "no-store"
            assert page.headers["x-frame-options"] == "DENY"
        assert nonces[0] != nonces[1]

        for headers in (
            {"Origin": "https://evil.example"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site", "Origin": "https://sub.127.0.0.1"},
            {"Origin": "null"},
        ):
            refused = await client.post(form, data=accept, headers=headers)
            assert refused.status_code == 403, headers
        assert (await client.get(state_url)).json()["status"] == "pending"
        assert not call.task.done()

        # The same post from the form's own origin is the one that counts, and only once.
        ours = await client.post(form, data=accept, headers={"Origin": gateway.url})
        assert ours.status_code == 303
        assert text_of(await call.result()) == 'User provided: {"approved":true}'
        again = await client.post(form, data={"hg-action": "decline"}, headers={"Origin": gateway.url})
        assert again.status_code == 409
        assert "already answered" in again.text.lower()
        assert (await client.get(state_url)).json()["status"] == "accepted"


async def test_the_countdown_runs_and_an_expired_form_is_closed(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="3", HUMANGATE_POLL_INTERVAL="0.5")
    call = start_call(gateway.url, {"message": "Quick!", "schema": APPROVAL, "uiType": "web"})
    watched = await open_page()
    page = watched.page
    await page.goto(await call.form_url())
    countdown = page.locator("#hg-countdown")
    first = await countdown.inner_text()
    assert re.fullmatch(r"[0-3] s left", first), first
    await expect(countdown).not_to_have_text(first, timeout=5000)
    await expect(page.get_by_role("button", name="Submit")).to_be_disabled(timeout=10000)
    await expect(countdown).to_have_text("This request expired; the agent stopped waiting.")
    for name in ("Decline", "Cancel"):
        await expect(page.get_by_role("button", name=name, include_hidden=True)).to_be_disabled()
    result = await call.result()
    assert text_of(result) == "User canceled: Request timed out after 3 seconds"
    assert result.is_error
    await page.reload()
    await expect(page.locator("h1")).to_have_text("Expired")
    await expect(page.locator(".outcome")).to_contain_text("This request expired at")
    await expect(page.locator("#hg-form")).to_have_count(0)
    assert await watched.problems(statuses=[410]) == []


async def test_the_form_works_without_javascript(start_gateway: StartGateway, open_page: OpenPage) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "No JS?", "schema": APPROVAL, "uiType": "web"})
    page = (await open_page(javascript=False)).page
    await page.goto(await call.form_url())
    await expect(page.locator("#hg-countdown")).to_contain_text("left")  # rendered by the server
    await page.get_by_label("Approved").check()
    await page.get_by_role("button", name="Submit").click()
    await expect(page.locator(".notice")).to_contain_text("Your answer was recorded")
    assert text_of(await call.result()) == 'User provided: {"approved":true}'


async def test_an_unknown_garbled_or_tampered_link_says_so(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Real one", "schema": APPROVAL, "uiType": "web"})
    form_url = await call.form_url()
    real_id = hf_id_of(form_url)
    for javascript in (True, False):  # the pages say it all without JavaScript
        watched = await open_page(javascript=javascript)
        page = watched.page
        for token in ("0123456789abcdef.not-the-secret", real_id, "%3Cscript%3E", f"{'0' * 16}.{'A' * 32}"):
            response = await page.goto(f"{gateway.url}/f/{token}")
            assert response is not None and response.status == 404, token
            await expect(page.locator("h1")).to_have_text("This link is not valid or has expired.")
            await expect(page.locator("#hg-form")).to_have_count(0)
        response = await page.goto(f"{gateway.url}/f/{real_id}.{'A' * 32}")  # the request exists
        assert response is not None and response.status == 403
        await expect(page.locator("h1")).to_have_text("This link is not valid.")
        await expect(page.locator("p").first).to_contain_text("Open the link exactly as you received it")
        await expect(page.locator("#hg-form")).to_have_count(0)
        assert await watched.problems(statuses=[403, 404]) == []
    page = (await open_page()).page
    response = await page.goto(form_url)
    assert response is not None and response.status == 200  # the real link still works
    await withdraw(gateway.url, call, form_url)


async def test_an_expired_link_is_a_readable_410_page(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    gateway = start_gateway(HUMANGATE_ANONYMOUS_TIMEOUT="1", HUMANGATE_POLL_INTERVAL="0.2")
    call = start_call(gateway.url, {"message": "Too late", "schema": APPROVAL, "uiType": "web"})
    form_url = await call.form_url()
    assert text_of(await call.result()) == "User canceled: Request timed out after 1 second"
    watched = await open_page(javascript=False)
    response = await watched.page.goto(form_url)
    assert response is not None and response.status == 410
    await expect(watched.page.locator("h1")).to_have_text("Expired")
    await expect(watched.page.locator(".outcome")).to_contain_text("This request expired at")
    assert await watched.problems(statuses=[410]) == []


async def test_a_pattern_with_a_hyphen_in_a_class_is_checked_by_the_browser_too(
    start_gateway: StartGateway, open_page: OpenPage
) -> None:
    # ``^[a-z0-9_-]+$`` is a valid ECMA-262 pattern, but Chromium compiles the HTML ``pattern``
    # attribute with the ``v`` flag, where an unescaped ``-`` in a class is a syntax error.
    schema = {
        "type": "object",
        "properties": {"slug": {"type": "string", "title": "Slug", "pattern": "^[a-z0-9_-]+$"}},
    }
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": "Pick a slug", "schema": schema, "uiType": "web"})
    watched = await open_page()
    page = watched.page
    await page.goto(await call.form_url())
    slug = page.get_by_label("Slug")
    await slug.fill("Not a slug!")
    mismatch = await slug.evaluate("(input) => input.validity.patternMismatch")
    problems = await watched.problems()
    await slug.fill("my-slug_1")
    await page.get_by_role("button", name="Submit").click()
    assert text_of(await call.result()) == 'User provided: {"slug":"my-slug_1"}'
    assert problems == []
    assert mismatch is True
