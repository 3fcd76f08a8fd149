"""The rendered message in a real headless Chromium: the web form and the inbox show bold, code, a
list and a table as elements, under the pages' CSP, and a ``javascript:`` link is never a link.

With ``HG_SCREENSHOTS=1`` the test also saves the web form as docs/images/web-form-markdown.png
(the figure of docs/rendering.md); CI leaves the tracked image alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.browser import OpenPage
from tests.channels.markdown_cases import RICH
from tests.conftest import StartGateway
from tests.gateway.flows import start_call
from tests.gateway.inbox.operators import create_key

pytestmark = pytest.mark.browser

MESSAGE = RICH + "\n\nNot a link: [click me](javascript:alert(1)) <javascript:alert(2)>"
SCHEMA = {
    "type": "object",
    "title": "Deploy v2.1 to prod?",
    "properties": {"approved": {"type": "boolean", "title": "Approve the deploy"}},
    "required": ["approved"],
}
FIGURE = Path(__file__).parents[3] / "docs" / "images" / "web-form-markdown.png"
FIGURE_WIDTH = 900


async def shows_the_rendering(page: Page) -> None:
    message = page.locator("#hg-message")
    await expect(message.locator("strong").first).to_have_text("v2.1")
    weight = await message.locator("strong").first.evaluate("e => getComputedStyle(e).fontWeight")
    assert int(weight) >= 600
    await expect(message.locator("li code").first).to_have_text("payments")
    font = await message.locator("li code").first.evaluate("e => getComputedStyle(e).fontFamily")
    assert "monospace" in font
    assert await message.locator("ul > li").all_inner_texts() == [
        "stop the payments workers",
        "run the migration\ntake a snapshot\napply 0042_add_index",
        "restart the cache (not needed)",
    ]
    await expect(message.locator("table")).to_be_visible()
    assert await message.locator("th").all_inner_texts() == ["service", "cost", "owner"]
    await expect(message.locator("td.hg-right").first).to_have_css("text-align", "right")
    await expect(message.locator(".hg-added")).to_have_text("+replicas: 4")
    added = await message.locator(".hg-added").evaluate("e => getComputedStyle(e).backgroundColor")
    assert added not in ("rgba(0, 0, 0, 0)", "transparent")  # the CSS colours the diff
    assert await page.locator("a[href^='javascript:' i], [href*='javascript:' i]").count() == 0
    await expect(message).to_contain_text("[click me](javascript:alert(1))")
    await expect(message.get_by_role("link", name="runbook")).to_have_attribute(
        "href", "https://wiki.example.com/runbook"
    )


async def test_the_web_form_and_the_inbox_show_the_rendered_message(
    start_gateway: StartGateway, open_page: OpenPage, redis_url: str
) -> None:
    gateway = start_gateway()
    call = start_call(gateway.url, {"message": MESSAGE, "schema": SCHEMA, "uiType": "web"})
    form_url = await call.form_url()
    watched = await open_page()
    page = watched.page
    await page.set_viewport_size({"width": FIGURE_WIDTH, "height": 900})
    await page.goto(form_url)
    await shows_the_rendering(page)
    if os.environ.get("HG_SCREENSHOTS") == "1":
        FIGURE.parent.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(FIGURE), full_page=True)
    assert await watched.problems() == []  # no inline style or script was blocked by the CSP

    key = await create_key(redis_url, "ada")
    await page.goto(f"{gateway.url}/inbox")
    await page.get_by_label("Operator key").fill(key)
    await page.keyboard.press("Enter")
    preview = page.locator("#hg-list .preview")
    await expect(preview).to_contain_text("Deploy v2.1 to prod The plan")  # plain text, no markup
    assert "**" not in await preview.inner_text()
    await page.locator("#hg-list a").click()
    await shows_the_rendering(page)
    assert await watched.problems() == []
    call.task.cancel()
