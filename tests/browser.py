"""Headless Chromium (Debian's package) driven by Playwright, for the web form tests.

``launch_chromium`` starts the browser; ``watch`` opens a page in a fresh context and records what
went wrong on it, across navigations: console errors, uncaught exceptions and CSP violations (the
latter reported from the page through an exposed function, so a form post that navigates away does
not lose them). The fixtures themselves live in ``tests/gateway/conftest.py``.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from playwright.async_api import Browser, ConsoleMessage, Error, Page, async_playwright

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

CSP_REPORTER = "__hgCspViolation"
"""Name of the function each page calls with a CSP violation (exposed by Playwright, not the page)."""

RECORD_CSP_VIOLATIONS = f"""
document.addEventListener("securitypolicyviolation", (event) => {{
  window.{CSP_REPORTER}(event.violatedDirective + " " + event.blockedURI);
}});
"""


LOAD_FAILURE = "Failed to load resource: the server responded with a status of"
"""How Chromium's console reports a response with an error status (the page itself included)."""


@dataclass
class Watched:
    """A page in its own context, plus what went wrong on it since it was opened."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    violated: asyncio.Event = field(default_factory=asyncio.Event)

    def report_violation(self, text: str) -> None:
        self.csp_violations.append(text)
        self.violated.set()

    async def problems(self, *, statuses: Iterable[int] = ()) -> list[str]:
        """Every console error, uncaught exception and CSP violation so far (``[]`` when clean).

        ``statuses``: error statuses the test expects a page to have; Chromium logs each one as a
        console error ("Failed to load resource: ... status of 410"), which is then not a problem.
        """
        if not self.page.is_closed():
            # A round trip: whatever the page reported before this answer has been delivered.
            await self.page.title()
        expected = tuple(f"{LOAD_FAILURE} {status} " for status in statuses)
        console = [text for text in self.console_errors if not text.startswith(expected)]
        return console + self.page_errors + self.csp_violations


OpenPage = Callable[..., Awaitable[Watched]]
"""``await open_page(javascript=True)``: a watched page in a fresh browser context."""


@asynccontextmanager
async def launch_chromium() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless, through Playwright's async API."""
    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is missing: scripts/test installs it"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def watch(browser: Browser, *, javascript: bool = True) -> Watched:
    """A page in a new context of ``browser`` whose errors and CSP violations are recorded."""
    context = await browser.new_context(java_script_enabled=javascript)
    page = await context.new_page()
    watched = Watched(page)
    await context.expose_function(CSP_REPORTER, watched.report_violation)
    await context.add_init_script(RECORD_CSP_VIOLATIONS)

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watched.console_errors.append(message.text)

    def on_page_error(error: Error) -> None:
        watched.page_errors.append(f"uncaught: {error.message}")

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    return watched
