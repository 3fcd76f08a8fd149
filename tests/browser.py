"""Headless Chromium (Debian's package) driven by Playwright, for the web form tests."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Flags for a closed network: without the background-networking ones Chromium keeps dialling out."""

RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


@dataclass
class Watched:
    """A page plus what went wrong on it: console errors and CSP violations."""

    page: Page
    console_errors: list[str] = field(default_factory=list)

    async def csp_violations(self) -> list[str]:
        violations: list[str] = await self.page.evaluate("window.__cspViolations || []")
        return violations


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is missing: scripts/test installs it"
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        await launched.close()


async def new_page(browser: Browser, *, javascript: bool = True) -> Watched:
    context = await browser.new_context(java_script_enabled=javascript)
    await context.add_init_script(RECORD_CSP_VIOLATIONS)
    watched = Watched(await context.new_page())

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watched.console_errors.append(message.text)

    watched.page.on("console", on_console)
    return watched
