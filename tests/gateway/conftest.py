"""Fixtures of the gateway tests that drive a real headless Chromium (see ``tests/browser.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, BrowserContext

from tests.browser import OpenPage, Watched, launch_chromium, watch


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless, for one test."""
    async with launch_chromium() as launched:
        yield launched


@pytest.fixture
async def open_page(browser: Browser) -> AsyncIterator[OpenPage]:
    """Open watched pages, each in a fresh browser context; all are closed after the test."""
    contexts: list[BrowserContext] = []

    async def open_(*, javascript: bool = True) -> Watched:
        watched = await watch(browser, javascript=javascript)
        contexts.append(watched.page.context)
        return watched

    yield open_
    for context in contexts:
        await context.close()
