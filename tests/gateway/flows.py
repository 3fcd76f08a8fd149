"""Helpers for end-to-end flows: start an elicit call, find its form link, answer it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import mcp_types as types

from tests.mcp_client import Era, call_elicit

FORM_LINK = re.compile(r"(https?://[^\s;]+/f/[A-Za-z0-9._~-]+)")
WAIT = 30.0
"""Seconds any single step of a flow may take before the test fails."""


@dataclass
class PendingCall:
    """A running ``elicit`` call and what it has been told so far."""

    task: asyncio.Task[types.CallToolResult]
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    first_progress: asyncio.Event = field(default_factory=asyncio.Event)
    progressed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def form_url(self) -> str:
        await asyncio.wait_for(self.first_progress.wait(), WAIT)
        message = self.progress[0][2] or ""
        match = FORM_LINK.search(message)
        assert match, f"no form link in progress message {message!r}"
        return match.group(1)

    async def wait_for_progress(self, count: int = 1, containing: str = "") -> list[str]:
        """The messages of the first ``count`` progress notifications containing ``containing``."""

        def found() -> list[str]:
            return [m or "" for _, _, m in self.progress if containing in (m or "")][:count]

        async with self.progressed:
            await asyncio.wait_for(self.progressed.wait_for(lambda: len(found()) >= count), WAIT)
        return found()

    async def wait_for_message(self, wanted: Callable[[str], bool], after: int = 0) -> str:
        """The first progress message after the first ``after`` ones that ``wanted`` accepts."""

        def found() -> str | None:
            return next((m or "" for _, _, m in self.progress[after:] if wanted(m or "")), None)

        async with self.progressed:
            await asyncio.wait_for(self.progressed.wait_for(lambda: found() is not None), WAIT)
        message = found()
        assert message is not None
        return message

    async def result(self) -> types.CallToolResult:
        return await asyncio.wait_for(self.task, WAIT)


def start_call(
    base_url: str,
    arguments: dict[str, Any],
    *,
    era: Era = "legacy",
    api_key: str | None = None,
    tool: str = "elicit",
) -> PendingCall:
    """Start calling ``tool`` (``elicit`` by default); its progress is recorded as it arrives."""
    pending: PendingCall

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pending.progress.append((progress, total, message))
        pending.first_progress.set()
        async with pending.progressed:
            pending.progressed.notify_all()

    task = asyncio.create_task(
        call_elicit(base_url, arguments, era=era, api_key=api_key, on_progress=on_progress, tool=tool)
    )
    pending = PendingCall(task)
    return pending


async def post_form(url: str, fields: Mapping[str, str | list[str]]) -> httpx.Response:
    """Post the web form as a browser without JavaScript would (same-origin, form-encoded)."""
    async with httpx.AsyncClient(timeout=WAIT) as client:
        return await client.post(url, data=fields, follow_redirects=False)
