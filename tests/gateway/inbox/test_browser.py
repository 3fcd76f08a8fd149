"""The inbox in a real headless Chromium: signing in, a request appearing live (created through
another gateway process), and answering it from the keyboard; the agent gets the result."""

from __future__ import annotations

import re
from typing import Literal

import pytest
from playwright.async_api import expect

from tests.browser import OpenPage
from tests.conftest import StartGateway
from tests.gateway.flows import post_form, start_call
from tests.gateway.inbox.operators import create_key
from tests.mcp_client import text_of

pytestmark = pytest.mark.browser


async def test_sign_in_see_a_request_arrive_live_and_answer_it_by_keyboard(
    start_gateway: StartGateway, open_page: OpenPage, redis_url: str
) -> None:
    inbox_gateway, agent_gateway = start_gateway(), start_gateway()  # one Redis, two processes
    key = await create_key(redis_url, "ada")
    watched = await open_page()
    page = watched.page
    await page.goto(f"{inbox_gateway.url}/inbox")
    await expect(page.get_by_label("Operator key")).to_be_focused()
    await page.keyboard.type(key)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="humangate inbox")).to_be_visible()
    assert page.url == f"{inbox_gateway.url}/inbox"  # the key never shows in a URL
    (cookie,) = await page.context.cookies()
    assert (cookie["name"], cookie["path"], cookie["httpOnly"], cookie["sameSite"]) == (
        "hg_inbox",
        "/inbox",
        True,
        "Strict",
    )
    await expect(page.locator("#hg-feed-state")).to_have_text("Live: new requests appear as they arrive.")
    await expect(page.locator("#hg-empty")).to_be_visible()

    call = start_call(
        agent_gateway.url,
        {"message": "Which database URL should I use?", "type": "text", "uiType": "web"},
        tool="request_user_input",
    )
    item = page.locator("#hg-list li")
    await expect(item).to_have_count(1)
    await expect(item).to_contain_text("Which database URL should I use?")
    await expect(item).to_contain_text("anonymous · web")
    notice = "New request from anonymous on web: Which database URL should I use?"
    await expect(page.locator("#hg-live")).to_have_text(notice)
    await expect(page.locator("#hg-toast-text")).to_have_text(notice)
    await expect(page).to_have_title("(1) Inbox · humangate")

    await page.keyboard.press("j")
    await expect(item.locator("a")).to_be_focused()
    await page.keyboard.press("Enter")  # opens the request's form; the first field gets the focus
    field = page.get_by_label("Your answer")
    await expect(field).to_be_focused()
    await page.keyboard.type("postgresql://db.internal/app")
    await page.keyboard.press("Control+Enter")
    await expect(page.locator("#hg-notice")).to_have_text("Your answer was recorded; the agent has it.")
    await expect(page.locator("#hg-list li")).to_have_count(0)

    result = await call.result()
    assert text_of(result) == 'User provided: {"response":"postgresql://db.internal/app"}'
    assert await watched.problems() == []


async def test_the_open_request_ending_elsewhere_disables_its_form_and_says_how(
    start_gateway: StartGateway, open_page: OpenPage, redis_url: str
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "bo")
    call = start_call(gateway.url, {"prompt": "Which approach?", "uiType": "web"}, tool="request_human_input")
    form = await call.form_url()
    watched = await open_page()
    page = watched.page
    await page.goto(f"{gateway.url}/inbox")
    await page.get_by_label("Operator key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#hg-feed-state")).to_have_text("Live: new requests appear as they arrive.")
    await page.keyboard.press("?")
    await expect(page.get_by_role("heading", name="Keyboard shortcuts")).to_be_visible()
    await expect(page.locator("#hg-help")).to_contain_text("Submit the answer (anywhere in the form)")
    await page.keyboard.press("Escape")
    await expect(page.locator("#hg-help")).to_be_hidden()
    await page.keyboard.press("n")  # the newest request
    reply = page.get_by_label("Your reply")
    await expect(reply).to_be_focused()
    await page.keyboard.type("Half an answer")
    await post_form(form, {"hg-action": "decline", "hg-reason": "Asked the wrong person"})
    banner = page.locator("#hg-ended")
    await expect(banner).to_have_text(
        "This request has ended: Declined by web form. Nothing you typed here was sent."
    )
    await expect(reply).to_be_disabled()
    assert text_of(await call.result()) == "User declined: Asked the wrong person"
    # Escape goes back to the list (the first one only leaves the field if it kept the focus).
    await page.keyboard.press("Escape")
    await page.keyboard.press("Escape")
    await expect(page).to_have_url(f"{gateway.url}/inbox")
    assert await watched.problems() == []


def luminance(css_color: str) -> float:
    """WCAG relative luminance of a computed ``rgb(r, g, b)`` colour."""
    channels = [int(part) / 255 for part in re.findall(r"\d+", css_color)[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast ratio of two computed colours (1 to 21)."""
    lighter, darker = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_submit_buttons_key_hint_is_readable(
    start_gateway: StartGateway, open_page: OpenPage, redis_url: str, scheme: Literal["light", "dark"]
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "cy")
    start_call(gateway.url, {"prompt": "Which approach?", "uiType": "web"}, tool="request_human_input")
    watched = await open_page()
    page = watched.page
    await page.emulate_media(color_scheme=scheme)
    await page.goto(f"{gateway.url}/inbox")
    await page.get_by_label("Operator key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#hg-list li")).to_have_count(1)
    await page.keyboard.press("n")
    hint = page.locator("#hg-submit kbd")
    await expect(hint).to_have_text("Ctrl+Enter")
    color, background = await hint.evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]"
    )
    assert "0, 0, 0, 0" not in background  # the hint has a background of its own
    assert contrast(color, background) >= 4.5, (scheme, color, background)  # WCAG AA, normal text
