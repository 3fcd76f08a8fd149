"""Who sent a Telegram update, as the Bot API names them (``callback_query.from``, ``message.from``),
and the few ways the bot speaks to one person: answering a tap, replying in a thread.

Identity is the update's ``from.id``, which Telegram fills from the account that acted: policies name
it ``telegram:<user id>``. A message sent on behalf of a chat (``sender_chat``: an anonymous group
admin, whose ``from`` is the placeholder ``GroupAnonymousBot``, or a channel) names nobody and is
refused. A courtesy note that cannot be sent is logged, never raised: it must not undo an answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from channels.display import clip
from channels.telegram.api import TelegramApi
from channels.telegram.message import escape, ref_line
from schemas.errors import DeliveryError
from schemas.models import Person

logger = logging.getLogger(__name__)

ANONYMOUS_ADMIN_ID = 1087968824
"""``from.id`` of Telegram's ``GroupAnonymousBot``: the sender of a message an admin posts anonymously."""

ALERT_CHARS = 200
"""Telegram's limit of an ``answerCallbackQuery`` text."""

CHANNEL = "telegram"


def sender(source: Mapping[str, Any]) -> tuple[str, str] | None:
    """(user id, first name) of whoever sent a message or tapped a button; ``None`` when it was sent
    on behalf of a chat (an anonymous admin, a channel) or by a bot, so it names no person."""
    user = source.get("from")
    if not isinstance(user, Mapping) or source.get("sender_chat") is not None:
        return None
    user_id = user.get("id")
    if not isinstance(user_id, int) or user_id == ANONYMOUS_ADMIN_ID or user.get("is_bot"):
        return None
    return str(user_id), str(user.get("first_name") or "someone")


def identity(update: Mapping[str, Any]) -> Person | None:
    """The person behind an update (a tap or a message), as Telegram vouches for them."""
    source = update.get("callback_query") or update.get("message") or update
    found = sender(source) if isinstance(source, Mapping) else None
    return None if found is None else Person(channel=CHANNEL, id=found[0], name=found[1])


def answered_by(person: Person) -> str:
    """``Ada (123456789)``: the first name people see and the stable user id."""
    return f"{person.name} ({person.id})"


def held(person: Person) -> list[str]:
    """What the person holds, as policies name approvers."""
    return [f"{CHANNEL}:{person.id}"]


def user_mention(person: Person) -> str:
    """The person's first name as a text mention (notifies them; ``ForceReply``'s ``selective``)."""
    return f'<a href="tg://user?id={escape(person.id)}">{escape(person.name)}</a>'


async def tell_tap(api: TelegramApi, query: Mapping[str, Any], text: str, *, alert: bool = False) -> None:
    """Answer a tap (stops the button's spinner); ``alert`` shows ``text`` in a dialog."""
    params: dict[str, Any] = {
        "callback_query_id": str(query.get("id") or ""),
        "text": clip(text, ALERT_CHARS),
    }
    if alert:
        params["show_alert"] = True
    try:
        await api.call("answerCallbackQuery", params)
    except DeliveryError as exc:
        logger.info("cannot answer a tap channel=telegram (%s)", exc)


async def send(
    api: TelegramApi,
    chat_id: object,
    html_text: str,
    *,
    reply_to: object = None,
    markup: Mapping[str, Any] | None = None,
    hf_id: str = "",
) -> dict[str, Any] | None:
    """Send ``html_text`` (already escaped) with the request's footer, in reply to ``reply_to``;
    the sent message, or ``None`` when Telegram refused it (logged)."""
    params: dict[str, Any] = {
        "chat_id": chat_id,
        "text": f"{html_text}\n{ref_line(hf_id)}" if hf_id else html_text,
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": True},
    }
    if reply_to is not None:
        params["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
    if markup is not None:
        params["reply_markup"] = dict(markup)
    try:
        sent = await api.call("sendMessage", params)
    except DeliveryError as exc:
        logger.warning("cannot send a message hf=%s channel=telegram (%s)", hf_id, exc)
        return None
    return sent if isinstance(sent, dict) else None


async def reply_plain(api: TelegramApi, message: Mapping[str, Any], text: str, hf_id: str) -> None:
    """Reply ``text`` (our words, escaped here) to a person's message."""
    chat = (message.get("chat") or {}).get("id")
    await send(api, chat, escape(text), reply_to=message.get("message_id"), hf_id=hf_id)
