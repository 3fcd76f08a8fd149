"""The web channel: a hosted form at ``/f/{token}`` instead of a message on a chat platform.

Nothing is posted anywhere, so ``deliver`` and ``update`` do nothing: the page itself shows the
Human Function as it is now (see ``channels.web.page``). ``verify`` stands in for a platform's
signature: the form's URL is the capability, so what must be refused is a post another site makes a
browser send (a cross-site form post), told by the Fetch Metadata and ``Origin`` headers.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from channels.base import FORM_BODY_BYTES, Desk, Endpoint, Inbound, Opening, RenderContext
from channels.web.form import show_form, submit_form
from channels.web.page import render_page
from channels.web.post import CHANNEL, parse_form, verify_same_origin
from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings


class WebChannel:
    """The hosted web form; always configured, and the only I/O is the person's browser."""

    name = CHANNEL
    title = "The web form"
    posts = False
    edits = True
    client_modules: tuple[str, ...] = ()
    target_setting: str | None = None

    def missing_settings(self, settings: Settings) -> list[str]:
        return []

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint("/f/{token}", ("GET",), show_form, FORM_BODY_BYTES, signed=False, what="a form page"),
            Endpoint("/f/{token}", ("POST",), submit_form, FORM_BODY_BYTES, signed=False, what="a form post"),
        ]

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> None:
        self.verify(inbound.headers, inbound.body, desk.now(), desk.settings)

    def render(self, hf: HumanFunction, ctx: RenderContext) -> str:
        return render_page(hf, ctx, nonce=secrets.token_urlsafe(16))

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        return parse_form(hf, payload)

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        return None  # a capability link vouches for no one

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        verify_same_origin(headers)

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[None]:
        yield None

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        return {}

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        return None

    async def remind(self, hf: HumanFunction, text: str, client: Any) -> None:
        """The web form posts nothing, so it has no thread to remind in."""

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        return None

    def openings(self, settings: Settings) -> list[Opening]:
        """None: the platform reaches this channel by calling its endpoints."""
        return []

    async def check(self, settings: Settings) -> list[str]:
        return []
