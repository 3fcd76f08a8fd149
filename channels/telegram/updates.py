"""The one handler of Telegram updates, whichever way they came (long polling or the webhook).

An update is a tap on one of humangate's buttons (``callback_query``) or a message replying to one
of humangate's messages (a conversation's answer, ``channels.telegram.conversation``); anything else
is ignored. Who acted is the update's ``from.id``: when the request has approvers, anyone else is
refused (an alert for a tap, a reply for a message) and nothing changes; a message sent as an
anonymous group admin names nobody and is refused too.

Each update is applied once per ``update_id``: it is checked against the marks of applied updates
first (``Desk.seen_before``) and marked only once applied (``Desk.first_delivery``), so an update
whose process died half way is applied by whoever reads it next; what it did before dying is
idempotent (an answer is first-wins, a conversation step remembers its update).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from channels.approvers import NOT_AN_APPROVER, refusal, refusal_reason
from channels.base import Desk
from channels.display import approval_field, outcome_summary, sentence_case
from channels.telegram import buttons as b
from channels.telegram import conversation as talk_
from channels.telegram.api import TelegramApi
from channels.telegram.message import hf_id_in
from channels.telegram.people import answered_by, held, identity, reply_plain, sender, tell_tap
from schemas.errors import (
    ApprovalRefusedError,
    ClosedError,
    InvalidAnswerError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.flat import options_of
from schemas.models import Action, Answer, HumanFunction, Person

logger = logging.getLogger(__name__)

UPDATE_WINDOW = 24 * 3600
"""Seconds an applied update stays marked: Telegram keeps an unconfirmed update at most a day."""

GONE = (
    "This request is no longer known to humangate: it ended, and ended requests are forgotten after a while."
)
ANONYMOUS = (
    "humangate cannot tell who you are when you post as the group (an anonymous admin), so this "
    "answer was not recorded. Turn off Remain anonymous in your admin rights, or answer from your account."
)
CHANNEL = "telegram"


def update_mark(bot_id: str, update_id: object) -> str:
    """What marks one update of one bot as applied (``Desk.first_delivery``'s signature)."""
    return f"update:{bot_id}:{update_id}"


async def apply_update(desk: Desk, update: Mapping[str, Any]) -> None:
    """Apply one update once. Raises ``StoreUnavailableError`` (not applied: read it again later)."""
    api: TelegramApi = await desk.client()
    update_id = update.get("update_id")
    if not isinstance(update_id, int):
        return
    mark = update_mark(api.bot_id, update_id)
    if await desk.seen_before(mark):
        logger.info("update %d already applied channel=telegram", update_id)
        return
    try:
        if isinstance(query := update.get("callback_query"), Mapping):
            await on_tap(desk, api, query, update_id)
        elif isinstance(message := update.get("message"), Mapping):
            await on_message(desk, api, message, update_id)
    except StoreUnavailableError:
        raise
    except Exception:  # one broken update must not stop every later one
        logger.exception("update %d failed channel=telegram; not applied", update_id)
    await desk.first_delivery(mark, UPDATE_WINDOW)


def ended_words(hf: HumanFunction) -> str:
    """``This request has already ended: Approved by Ada (123).``"""
    summary = outcome_summary(hf)
    return f"This request has already ended: {summary.sentence() if summary else hf.status.value}."


async def on_tap(desk: Desk, api: TelegramApi, query: Mapping[str, Any], update_id: int) -> None:
    tap = b.read_tap(query.get("data"))
    person = identity({"callback_query": query})
    if tap is None or person is None:
        await tell_tap(api, query, "This button is not one of humangate's.")
        return
    try:
        hf = await desk.get(tap.hf_id)
    except UnknownRequestError:
        await tell_tap(api, query, GONE, alert=True)
        return
    found = query.get("message")
    message: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if tap.code in b.ON_REQUEST:
        await remember_message(desk, hf, message)
    if not hf.is_pending:
        await tell_tap(api, query, ended_words(hf), alert=True)
        return
    if not await allowed(desk, hf, person):
        await tell_tap(api, query, refused_words(hf, person), alert=True)
        return
    thread = [(message.get("chat") or {}).get("id"), message.get("message_id")]
    if tap.code == b.APPROVE and (name := approval_field(hf.request_schema)):
        await tell_tap(api, query, await answer(desk, hf, person, Action.ACCEPT, content={name: True}))
    elif tap.code == b.CHOOSE and len(fields := talk_.fields_of(hf)) == 1 and tap.index is not None:
        name, prop = fields[0]
        options = options_of(prop)
        value = options[tap.index].value if tap.index < len(options) else ""
        await tell_tap(api, query, await answer(desk, hf, person, Action.ACCEPT, content={name: value}))
    elif tap.code in (b.DECLINE, b.RESPOND):
        mode = talk_.DECLINE if tap.code == b.DECLINE else talk_.FORM
        if mode == talk_.FORM:
            await desk.started(hf, held(person)[0])
        await talk_.begin(desk, api, hf, person, mode, thread, update_id)
        await tell_tap(
            api,
            query,
            "Answer in the thread below." if mode == talk_.FORM else "Reply with a reason, or /skip.",
        )
    else:
        await on_conversation_tap(desk, api, hf, person, query, tap)


async def on_conversation_tap(
    desk: Desk, api: TelegramApi, hf: HumanFunction, person: Person, query: Mapping[str, Any], tap: b.Tap
) -> None:
    talk = await talk_.load(desk, hf, person)
    if talk is None:
        await tell_tap(api, query, "Tap Respond on the request to answer it.")
        return
    if tap.code != b.SUBMIT:
        await tell_tap(api, query, await talk_.on_tap(desk, api, hf, person, talk, tap, query.get("message")))
        return
    if talk.at < len(talk_.fields_of(hf)) or talk.mode != talk_.FORM:
        await tell_tap(api, query, "Answer the questions first.")
        return
    try:
        content = talk_.submitted(hf, talk)
    except InvalidAnswerError as exc:
        await _ask_again(desk, api, hf, person, talk, query, exc)
        return
    words = await answer(
        desk, hf, person, Action.ACCEPT, content=content, raise_invalid=True, talk=talk, query=query
    )
    if words:
        await tell_tap(api, query, words)


async def _ask_again(
    desk: Desk,
    api: TelegramApi,
    hf: HumanFunction,
    person: Person,
    talk: talk_.Talk,
    query: Mapping[str, Any],
    exc: InvalidAnswerError,
) -> None:
    talk.at = talk_.first_wrong(hf, exc.errors)
    await talk_.save(desk, hf, person, talk)
    await tell_tap(api, query, f"Your answer was not recorded: {exc}", alert=True)
    await talk_.ask(api, hf, person, talk)


async def on_message(desk: Desk, api: TelegramApi, message: Mapping[str, Any], update_id: int) -> None:
    text, replied = message.get("text"), message.get("reply_to_message")
    if not isinstance(text, str) or not isinstance(replied, Mapping):
        return  # chatter: only replies to humangate's messages are answers
    author = replied.get("from") or {}
    if str(author.get("id")) != api.bot_id:
        return
    hf_id = hf_id_in(replied.get("text"))
    if hf_id is None:
        return
    try:
        hf = await desk.get(hf_id)
    except UnknownRequestError:
        await reply_plain(api, message, GONE, hf_id)
        return
    if sender(message) is None:
        logger.info("refused a reply hf=%s channel=telegram: sent as a chat (anonymous admin)", hf.id)
        if hf.is_pending:
            await desk.refused(hf, "telegram:anonymous", refusal_reason(NOT_AN_APPROVER))
        await reply_plain(api, message, ANONYMOUS, hf.id)
        return
    person = identity({"message": message})
    assert person is not None
    if not hf.is_pending:
        await reply_plain(api, message, ended_words(hf), hf.id)
        return
    if not await allowed(desk, hf, person):
        await reply_plain(api, message, refused_words(hf, person), hf.id)
        return
    talk = await talk_.load(desk, hf, person)
    if talk is None:
        return  # a reply to the request without a conversation: a comment, not an answer
    if update_id <= talk.last_update:
        return  # applied before its mark was written
    talk.thread = [(message.get("chat") or {}).get("id"), message.get("message_id")]
    reason = await talk_.on_text(desk, api, hf, person, talk, text, update_id)
    if reason is None:
        return
    action = Action.DECLINE if talk.mode == talk_.DECLINE else Action.CANCEL
    words = await answer(desk, hf, person, action, reason=reason or None, talk=talk)
    await reply_plain(api, message, words, hf.id)


async def allowed(desk: Desk, hf: HumanFunction, person: Person) -> bool:
    """Whether ``person`` may answer ``hf`` now; a refusal is written in its audit trail."""
    why = refusal(hf, held(person))
    if why is None:
        return True
    logger.info("refused hf=%s channel=telegram user=%s: %s", hf.id, person.id, why)
    await desk.refused(hf, held(person)[0], refusal_reason(why))
    return False


def refused_words(hf: HumanFunction, person: Person) -> str:
    return refusal(hf, held(person)) or NOT_AN_APPROVER


async def answer(
    desk: Desk,
    hf: HumanFunction,
    person: Person,
    action: Action,
    *,
    content: dict[str, Any] | None = None,
    reason: str | None = None,
    raise_invalid: bool = False,
    talk: talk_.Talk | None = None,
    query: Mapping[str, Any] | None = None,
) -> str:
    """Record ``person``'s answer; what to tell them (``""`` when already told)."""
    given = Answer(
        action=action,
        content=content,
        reason=reason,
        by=answered_by(person),
        via=CHANNEL,
        person=person,
        held=tuple(held(person)),
    )
    try:
        ended = await desk.answer(hf, given)
    except ClosedError as exc:
        if talk is not None:
            await talk_.drop(desk, hf, person)
        return f"{sentence_case(str(exc))}; your answer changed nothing."
    except ApprovalRefusedError as exc:
        return f"{sentence_case(str(exc))}. Nothing was changed."
    except InvalidAnswerError as exc:
        if raise_invalid and talk is not None and query is not None:
            await _ask_again(desk, await desk.client(), hf, person, talk, query, exc)
            return ""
        return f"Your answer was not recorded: {exc}"
    if talk is not None:
        await talk_.drop(desk, hf, person)
    logger.info("answered hf=%s channel=telegram status=%s", hf.id, ended.status.value)
    summary = outcome_summary(ended)
    return f"Recorded: {summary.sentence()}." if summary else "Recorded."


async def remember_message(desk: Desk, hf: HumanFunction, message: Mapping[str, Any]) -> None:
    """Record where the request's message is, from a tap on it, if its delivery never could (a worker
    stopped between posting and recording; Telegram lets no bot search a chat): the outcome can then
    be shown there."""
    if hf.refs or hf.channel != CHANNEL:
        return
    chat, message_id = (message.get("chat") or {}).get("id"), message.get("message_id")
    if chat is not None and message_id is not None:
        if await desk.remember_post(hf.id, {"chat_id": str(chat), "message_id": str(message_id)}):
            logger.info("recorded the message of hf=%s channel=telegram from a tap", hf.id)
