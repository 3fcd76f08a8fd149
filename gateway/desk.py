"""The gateway's side of a channel's inbound handlers: ``channels.base.Desk`` over this process's runtime.

A handler in ``channels/<platform>`` asks its desk for a Human Function, to answer it, for its form
link or the clock, and never imports the gateway; one desk per channel per app is built on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from channels.approvers import FORM_LINK
from channels.base import FormLink
from gateway.core import replay
from gateway.core.links import form_url, parse_form_token
from gateway.core.validation import validate_answer_off_loop
from gateway.drafts import Drafts
from gateway.runtime import Runtime
from gateway.signin import sign_in_url, signed_in_person
from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings


@dataclass
class RuntimeDesk:
    """``Desk`` for channel ``channel``, over ``runtime``."""

    runtime: Runtime
    channel: str
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def drafts(self) -> Drafts:
        return Drafts(self.runtime.redis)

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    def now(self) -> float:
        return self.runtime.service.clock()

    async def get(self, hf_id: str) -> HumanFunction:
        return await self.runtime.store.get(hf_id)

    async def started(self, hf: HumanFunction, who: str | None = None) -> HumanFunction:
        if hf.is_pending:  # looking at an ended request's outcome opens nothing
            await self.runtime.service.record(hf.id, "opened", who=who or FORM_LINK, where=self.channel)
        return await self.runtime.service.started(hf)

    async def refused(self, hf: HumanFunction, who: str, why: str) -> None:
        await self.runtime.service.refused(hf, who, self.channel, why)

    async def answer(self, hf: HumanFunction, answer: Answer) -> HumanFunction:
        return await self.runtime.service.answer(hf, answer)

    async def check_answer(self, schema: Mapping[str, Any], content: object) -> dict[str, Any]:
        return await validate_answer_off_loop(schema, content)

    def form_url(self, hf: HumanFunction) -> str:
        return form_url(self.runtime.settings, hf)

    def read_form_link(self, token: str) -> FormLink | None:
        return parse_form_token(token)

    async def client(self) -> Any:
        return await self.runtime.channel_client(self.channel)

    async def first_delivery(self, signature: str | bytes, window_seconds: int) -> bool:
        return await replay.first_delivery(self.runtime.redis, self.channel, signature, window_seconds)

    async def seen_before(self, signature: str | bytes) -> bool:
        return await replay.seen_before(self.runtime.redis, self.channel, signature)

    async def position(self, stream: str) -> int | None:
        return await replay.position(self.runtime.redis, self.channel, stream)

    async def advance(self, stream: str, value: int) -> None:
        await replay.advance(self.runtime.redis, self.channel, stream, value)

    async def remember_post(self, hf_id: str, refs: dict[str, str]) -> bool:
        return await self.runtime.store.set_refs_if_missing(hf_id, refs)

    async def signed_in_person(self, request: Request) -> Person | None:
        return await signed_in_person(request)

    def sign_in_url(self, next_path: str) -> str | None:
        return sign_in_url(next_path) if self.runtime.settings.oidc_enabled else None
