"""The Telegram channel: one message per request with inline buttons, answered by taps and replies
that arrive by long polling or at a webhook (``channels.telegram.inbound``), both through one handler
(``channels.telegram.updates``).

Rendering (``channels.telegram.message``) is pure; the only I/O is the Bot API over httpx
(``channels.telegram.api``). One message per request: Telegram offers no idempotent send and no way
for a bot to search a chat, so a post is retried only after failures that mean nothing was posted
(the connection never opened, a 429); one Telegram may have posted without saying so (a timeout, a
5xx) is not posted again. A worker that died between posting and recording leaves a post whose
first tap records it (``updates.remember_message``), so its outcome is still shown there.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from channels.base import Desk, Endpoint, Inbound, Opening, RenderContext
from channels.display import approval_field
from channels.telegram import buttons as b
from channels.telegram.api import TelegramApi
from channels.telegram.inbound import UPDATES_PATH, check_secret, poll, register, updates
from channels.telegram.message import reminder_text, render_message
from channels.telegram.people import answered_by, identity
from schemas.errors import DeliveryError, InvalidAnswerError
from schemas.flat import options_of
from schemas.models import Action, Answer, HumanFunction, Person
from schemas.settings import Settings

logger = logging.getLogger(__name__)

PLATFORM = "telegram"
"""The lease name of Telegram's one connection (``telegram:0``)."""


class TelegramChannel:
    """Telegram through a bot token (the Bot API over httpx)."""

    name = "telegram"
    title = "Telegram"
    posts = True
    edits = True
    client_modules: tuple[str, ...] = ()
    target_setting: str | None = "telegram_chat_id"

    def endpoints(self) -> list[Endpoint]:
        return [Endpoint(UPDATES_PATH, ("POST",), updates, what="a Telegram update")]

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> None:
        self.verify(inbound.headers, inbound.body, desk.now(), desk.settings)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        check_secret(headers, settings)

    def missing_settings(self, settings: Settings) -> list[str]:
        token = settings.telegram_bot_token
        wanted = {
            "TELEGRAM_BOT_TOKEN": token is not None and token.get_secret_value().strip(),
            "HUMANGATE_TELEGRAM_CHAT_ID": settings.telegram_chat_id,
        }
        return [name for name, value in wanted.items() if not value]

    def render(self, hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
        return render_message(hf, ctx)

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        """The answer a one-tap button gives (Approve, an option); a conversation's answers are
        assembled by ``channels.telegram.conversation``."""
        query = payload.get("callback_query") or {}
        tap = b.read_tap(query.get("data"))
        person = identity(payload)
        if tap is None or person is None or tap.hf_id != hf.id:
            raise InvalidAnswerError({"": "this is not a tap on one of this request's buttons"})
        by = answered_by(person)
        properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
        if tap.code == b.APPROVE and (name := approval_field(hf.request_schema)):
            content: dict[str, Any] = {name: True}
        elif tap.code == b.CHOOSE and len(properties) == 1 and tap.index is not None:
            name, prop = next(iter(properties.items()))
            options = options_of(prop)
            if tap.index >= len(options):
                raise InvalidAnswerError({name: "must be one of: " + ", ".join(o.value for o in options)})
            content = {name: options[tap.index].value}
        else:
            raise InvalidAnswerError({"": "this button asks for more; it does not answer by itself"})
        return Answer(action=Action.ACCEPT, content=content, by=by, via=self.name, person=person)

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        return identity(payload)

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[TelegramApi]:
        token = settings.telegram_bot_token.get_secret_value() if settings.telegram_bot_token else ""
        api = TelegramApi(settings.telegram_api_url, token, settings.telegram_chat_id or "")
        try:
            yield api
        finally:
            await api.close()

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        api: TelegramApi = client
        if hf.delivery_attempts > 1:
            logger.info("posting again after a failure that posted nothing hf=%s channel=telegram", hf.id)
        chat = hf.target or api.chat_id  # a policy's target replaces HUMANGATE_TELEGRAM_CHAT_ID
        sent = await api.call(
            "sendMessage",
            {"chat_id": chat, **render_message(hf, ctx), "link_preview_options": {"is_disabled": True}},
        )
        if not isinstance(sent, Mapping) or "message_id" not in sent:
            raise DeliveryError("sendMessage: Telegram's answer has no message_id", retryable=False)
        return {
            "chat_id": str((sent.get("chat") or {}).get("id", chat)),
            "message_id": str(sent["message_id"]),
        }

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        # A bot cannot read a chat's history; the first tap on such a post records it.
        return None

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        api: TelegramApi = client
        chat, message_id = hf.refs.get("chat_id"), hf.refs.get("message_id")
        if not chat or not message_id:
            return
        params = {"chat_id": chat, "message_id": int(message_id), **render_message(hf, ctx)}
        params["link_preview_options"] = {"is_disabled": True}
        try:
            await api.call("editMessageText", params)
        except DeliveryError as exc:
            if "message is not modified" in str(exc):
                return  # already shows this (an update job run twice)
            if exc.retryable:
                raise
            logger.warning("cannot show the outcome hf=%s channel=telegram: %s", hf.id, exc)

    async def remind(self, hf: HumanFunction, text: str, client: Any) -> None:
        api: TelegramApi = client
        chat, message_id = hf.refs.get("chat_id"), hf.refs.get("message_id")
        if not chat or not message_id:
            return
        await api.call(
            "sendMessage",
            {
                "chat_id": chat,
                "text": reminder_text(hf, text),
                "parse_mode": "HTML",
                "reply_parameters": {"message_id": int(message_id), "allow_sending_without_reply": True},
            },
        )

    def openings(self, settings: Settings) -> list[Opening]:
        """Long polling, or (with a webhook secret) the webhook's registration: one per installation."""
        if settings.telegram_webhook_secret is not None:
            return [Opening(PLATFORM, 1, "webhook", register)]
        return [Opening(PLATFORM, 1, "long polling", poll)]

    async def check(self, settings: Settings) -> list[str]:
        async with self.connect(settings) as api:
            try:
                me = await api.call("getMe")
            except DeliveryError as exc:
                return [str(exc)]
            problems = []
            try:
                await api.call("getChat", {"chat_id": api.chat_id})
            except DeliveryError as exc:
                problems.append(str(exc))
            if isinstance(me, Mapping) and me.get("can_read_all_group_messages") is True:
                logger.info(
                    "the bot reads every group message (privacy mode off); humangate needs only replies"
                )
            return problems
