"""The rich request as humangate sends it to Telegram, drawn by a real Chromium (docs/rendering.md):
the message's HTML holds only Telegram's tags, and a browser draws each construct apart (bold,
italic, code, a quote, preformatted blocks, links). With ``HG_SCREENSHOTS=1`` the test also saves
the picture docs/rendering.md shows, docs/images/telegram-markdown.png (CI leaves it as it is)."""

from __future__ import annotations

import html
import os
from pathlib import Path

import pytest
from playwright.async_api import expect

from channels.base import RenderContext
from channels.registry import CHANNELS
from schemas.models import HumanFunction
from tests.browser import OpenPage
from tests.channels.markdown_cases import RICH

pytestmark = pytest.mark.browser

FIGURE = Path(__file__).resolve().parents[2] / "docs" / "images" / "telegram-markdown.png"
CTX = RenderContext(form_url="https://gate.example/f/0123456789abcdef.secret", now=1_800_000_000.0)
TELEGRAM_TAGS = {"b", "i", "s", "code", "pre", "a", "blockquote"}

# A stand-in for Telegram's message bubble: its tags drawn as Telegram draws them (the app's own
# fonts and colours aside), the buttons under the bubble.
PAGE = """<!doctype html><meta charset="utf-8"><style>
body {{ background: #8fb3d9; font: 15px/1.4 sans-serif; margin: 0; padding: 24px; }}
.bubble {{ background: #fff; border-radius: 12px; padding: 10px 14px; max-width: 560px;
  white-space: pre-wrap; }}
pre {{ background: #f0f3f6; border-radius: 6px; padding: 6px 8px; margin: 4px 0; white-space: pre; }}
code {{ font-family: monospace; color: #b5226e; }} pre code {{ color: inherit; }}
blockquote {{ border-left: 3px solid #3a8fd6; margin: 4px 0; padding: 2px 10px; }}
a {{ color: #2a7ac0; }}
.buttons {{ display: flex; gap: 6px; max-width: 588px; margin-top: 6px; }}
.buttons span {{ flex: 1; text-align: center; background: rgba(0,0,0,.25); color: #fff;
  border-radius: 8px; padding: 8px; }}
</style><div class="bubble" id="message">{text}</div><div class="buttons">{buttons}</div>"""


async def test_telegram_shows_the_rich_request_with_its_own_tags(open_page: OpenPage) -> None:
    hf = HumanFunction(
        id="0123456789abcdef",
        requester="ci-bot",
        channel="telegram",
        message=RICH,
        request_schema={
            "type": "object",
            "properties": {"approved": {"type": "boolean"}},
            "required": ["approved"],
        },
        created_at=CTX.now,
        deadline=CTX.now + 300,
        form_secret="s" * 32,
    )
    payload = CHANNELS["telegram"].render(hf, CTX)
    assert payload["parse_mode"] == "HTML"
    rows = payload["reply_markup"]["inline_keyboard"]
    buttons = "".join(f"<span>{html.escape(button['text'])}</span>" for row in rows for button in row)
    watched = await open_page(javascript=True)
    page = watched.page
    await page.set_viewport_size({"width": 640, "height": 900})
    await page.set_content(PAGE.format(text=payload["text"], buttons=buttons))
    message = page.locator("#message")
    tags = set(await message.evaluate("m => [...m.querySelectorAll('*')].map(e => e.localName)"))
    assert tags <= TELEGRAM_TAGS, tags
    await expect(message.locator("b").first).to_contain_text("Deploy v2.1 to")
    await expect(message.locator("b i")).to_have_text("prod")
    await expect(message.locator("code").first).to_have_text("payments")
    await expect(message.locator("blockquote")).to_have_text("Rollback is one command.")
    await expect(message.locator("code.language-diff")).to_contain_text("+replicas: 4")
    await expect(message.locator("s")).to_have_text("restart the cache")
    await expect(message.get_by_role("link", name="runbook")).to_have_attribute(
        "href", "https://wiki.example.com/runbook"
    )
    if os.environ.get("HG_SCREENSHOTS") == "1":
        await page.screenshot(path=str(FIGURE), full_page=True)
