"""``POST /teams/messages``: the bot's messaging endpoint, where Teams sends clicks on humangate's cards.

Every activity is authenticated first (``TeamsChannel.authenticate``: the Bot Framework JWT, with the
OpenID keys fetched when missing, stale or naming an unknown ``kid``); any failure is a 401, never a
500. A click is applied once (``gateway.core.replay``, keyed by the activity's id for as long as its token
is accepted); a replay gets the card as it is now.

An ``Action.Execute`` click (an ``adaptiveCard/action`` invoke) is answered in the HTTP response
with the card to show the person who clicked: the reason card of Decline…, the card again with
each invalid field's error, or the ended card, within ``ANSWER_BUDGET`` (Teams gives up after 5 s;
slower work finishes in the background and the card is updated for everyone as usual). The
``Action.Submit`` fallback arrives as a message, answered with an empty 200; its outcome reaches the
card through the usual update. Other activities (installs, mentions) are acknowledged and ignored.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Coroutine, Mapping
from typing import Any, cast

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from channels.base import RenderContext
from channels.display import sentence_case
from channels.registry import CHANNELS
from channels.teams.actions import (
    CardAction,
    UnreadableFieldsError,
    answer_of,
    card_action,
    is_allowed,
    person,
)
from channels.teams.auth import Verified, bearer_token, key_id
from channels.teams.card import (
    APPROVE,
    ASK_REASON,
    CANCEL,
    DECLINE,
    REFRESH,
    SUBMIT,
    reason_card,
    render_card,
    summary_of,
)
from channels.teams.channel import TeamsChannel
from channels.teams.connector import TeamsClient
from channels.teams.inputs import typed_values
from gateway.core.links import form_url
from gateway.core.replay import first_delivery
from gateway.core.validation import validate_answer_off_loop
from gateway.runtime import Runtime
from schemas.errors import ClosedError, DeliveryError, InvalidAnswerError, SignatureError, UnknownRequestError
from schemas.models import Answer, HumanFunction

logger = logging.getLogger(__name__)

router = APIRouter()

ANSWER_BUDGET = 3.5
"""Seconds the work of a click may take before Teams is answered without the new card (Teams waits 5)."""

CARD = "application/vnd.microsoft.card.adaptive"
MESSAGE = "application/vnd.microsoft.activity.message"
"""Invoke response types: a card replacing the clicked one (for the clicker), or a short message."""

NOT_ALLOWED = (
    "You are not allowed to answer this request (HUMANGATE_TEAMS_ALLOWED_USERS). Nothing was changed."
)
GONE = (
    "This request is no longer known to humangate: it ended, and ended requests are forgotten after "
    "a while (by default a day for an agent with a key, an hour for an anonymous one)."
)
TOO_LATE = "This request has already ended; your click changed nothing."
STILL_WORKING = "Your answer is being recorded; the card will show it in a moment."

ANSWERS = frozenset({APPROVE, SUBMIT, DECLINE, CANCEL})
"""Verbs that answer a request (the others show a card)."""

Reply = dict[str, Any]
_running: set[asyncio.Task[Reply]] = set()
"""Clicks still being recorded after their budget, referenced so they are not garbage-collected."""


def _teams() -> TeamsChannel:
    return cast(TeamsChannel, CHANNELS["teams"])


@router.post("/teams/messages", include_in_schema=False)
async def messages(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    settings = runtime.settings
    channel = _teams()
    missing = channel.missing_settings(settings)
    if missing:
        detail = f"Teams is not configured on this gateway: set {', '.join(missing)}"
        return JSONResponse({"error": "NotConfiguredError", "detail": detail}, status_code=404)
    body = await request.body()
    headers = {name.lower(): value for name, value in request.headers.items()}
    try:
        verified = await authenticate(runtime, channel, headers, body)
    except SignatureError as exc:
        logger.warning("refused an activity channel=teams: %s", exc)
        return JSONResponse({"error": "SignatureError", "detail": str(exc)}, status_code=401)
    activity = verified.activity
    action = card_action(activity)
    if action is None:
        # The conversation id helps set HUMANGATE_TEAMS_CONVERSATION: mention the bot where it should post.
        conversation = _conversation(activity).removesuffix("|")[:200]
        logger.info(
            "ignored a %s activity channel=teams conversation=%s",
            str(activity.get("type"))[:40],
            conversation,
        )
        return Response(status_code=200)
    activity_id = activity.get("id")
    if not isinstance(activity_id, str) or not activity_id:
        detail = "the activity has no id"
        return JSONResponse({"error": "InvalidRequestError", "detail": detail}, status_code=400)
    window = max(1, math.ceil(verified.expires - runtime.service.clock()))
    if not await first_delivery(runtime.redis, channel.name, _conversation(activity) + activity_id, window):
        logger.info("replayed activity not applied again hf=%s channel=teams", action.hf_id)
        return JSONResponse(await _current(runtime, action)) if action.execute else Response(status_code=200)
    if action.execute:
        return JSONResponse(await within_budget(_execute(runtime, action, activity), action.hf_id))
    await _submit(runtime, action, activity)
    return Response(status_code=200)


async def authenticate(
    runtime: Runtime, channel: TeamsChannel, headers: Mapping[str, str], body: bytes
) -> Verified:
    """The verified activity; fetches the OpenID keys first when they are missing, old or lack the
    token's ``kid`` (at most once per unknown ``kid``)."""
    kid = key_id(bearer_token(headers))
    now = runtime.service.clock()
    if channel.keys.should_fetch(kid, now):
        client: TeamsClient = await runtime.channel_client(channel.name)
        await client.refresh_keys(channel.keys, kid, now)
    return channel.authenticate(headers, body, now, runtime.settings)


def card_reply(card: Mapping[str, Any]) -> Reply:
    """The invoke response that shows ``card`` to the person who clicked."""
    return {"statusCode": 200, "type": CARD, "value": dict(card)}


def message_reply(text: str) -> Reply:
    """The invoke response that shows a short message instead of a new card."""
    return {"statusCode": 200, "type": MESSAGE, "value": text}


async def within_budget(work: Coroutine[Any, Any, Reply], hf_id: str, budget: float = ANSWER_BUDGET) -> Reply:
    """``work``'s reply if it is ready within ``budget`` seconds; else a message saying the answer
    is being recorded, while the work goes on."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=budget)
    if task in done:
        return task.result()
    logger.warning("click still being recorded after %.1f s hf=%s channel=teams", budget, hf_id)

    def finished(done: asyncio.Task[Reply]) -> None:
        _running.discard(done)
        if not done.cancelled() and done.exception() is not None:
            logger.error("late click failed hf=%s channel=teams", hf_id, exc_info=done.exception())

    _running.add(task)
    task.add_done_callback(finished)
    return message_reply(STILL_WORKING)


def _context(runtime: Runtime, hf: HumanFunction) -> RenderContext:
    return RenderContext(form_url=form_url(runtime.settings, hf), now=runtime.service.clock())


async def _current(runtime: Runtime, action: CardAction) -> Reply:
    try:
        hf = await runtime.store.get(action.hf_id)
    except UnknownRequestError:
        return message_reply(GONE)
    return card_reply(render_card(hf, _context(runtime, hf)))


async def _execute(runtime: Runtime, action: CardAction, activity: Mapping[str, Any]) -> Reply:
    """Apply an ``Action.Execute`` click; the reply is the card the clicker sees next."""
    try:
        hf = await runtime.store.get(action.hf_id)
    except UnknownRequestError:
        return message_reply(GONE)
    object_id, by = person(activity)
    ctx = _context(runtime, hf)
    logger.info("click hf=%s channel=teams verb=%s user=%s", hf.id, action.verb, object_id or "?")
    if not is_allowed(object_id, runtime.settings.teams_allowed_users):
        logger.info("refused a user not allowed hf=%s channel=teams user=%s", hf.id, object_id or "?")
        return card_reply(render_card(hf, ctx, notice=NOT_ALLOWED))
    if action.verb == REFRESH:
        await runtime.service.started(hf)  # the person has the card in front of them
        return card_reply(render_card(hf, ctx))
    if not hf.is_pending:
        return card_reply(render_card(hf, ctx, notice=TOO_LATE))
    if action.verb == ASK_REASON:
        await runtime.service.started(hf)
        return card_reply(reason_card(hf))
    await _adopt(runtime, hf, activity)
    try:
        ended = await runtime.service.answer(hf, await _answer_of(hf, action, by))
    except InvalidAnswerError as exc:
        logger.info("invalid answer hf=%s channel=teams fields=%s", hf.id, ",".join(exc.errors))
        typed = typed_values(hf.request_schema, action.data)
        return card_reply(render_card(hf, ctx, typed=typed, errors=exc.errors))
    except ClosedError as exc:
        current = await runtime.store.get(hf.id)
        notice = f"{sentence_case(str(exc))}; your click changed nothing."
        return card_reply(render_card(current, ctx, notice=notice))
    return card_reply(render_card(ended, ctx))


async def _submit(runtime: Runtime, action: CardAction, activity: Mapping[str, Any]) -> None:
    """Apply an ``Action.Submit`` click; a refused one is shown by editing the card."""
    try:
        hf = await runtime.store.get(action.hf_id)
    except UnknownRequestError:
        return
    object_id, by = person(activity)
    allowed = is_allowed(object_id, runtime.settings.teams_allowed_users)
    if not allowed or not hf.is_pending or action.verb not in ANSWERS:
        logger.info("submit changed nothing hf=%s channel=teams user=%s", hf.id, object_id or "?")
        return
    await _adopt(runtime, hf, activity)
    try:
        await runtime.service.answer(hf, await _answer_of(hf, action, by))
    except InvalidAnswerError as exc:
        typed = typed_values(hf.request_schema, action.data)
        card = render_card(hf, _context(runtime, hf), typed=typed, errors=exc.errors)
        await _show(runtime, await runtime.store.get(hf.id), card)
    except ClosedError:
        pass  # the update of whoever won shows the outcome


async def _answer_of(hf: HumanFunction, action: CardAction, by: str) -> Answer:
    """``answer_of``, whose refusal names every failing field at once: the inputs that could not be
    read, and what the answer check says of the others. That check matches the agent's patterns, so
    it runs off the event loop, within its budget (``gateway.core.validation``), as for every channel."""
    try:
        return answer_of(hf, action, by)
    except UnreadableFieldsError as exc:
        unreadable = exc.errors
        readable = exc.readable
    try:
        await validate_answer_off_loop(hf.request_schema, readable)
    except InvalidAnswerError as exc:
        raise InvalidAnswerError(exc.errors | unreadable) from None
    raise InvalidAnswerError(dict(unreadable))


async def _adopt(runtime: Runtime, hf: HumanFunction, activity: Mapping[str, Any]) -> None:
    """Record the clicked card as the request's message when no delivery recorded one, so that its
    outcome is shown there (a post whose response never came back)."""
    card_id = activity.get("replyToId")
    if hf.refs or not isinstance(card_id, str) or not card_id:
        return
    refs = {"conversation": runtime.settings.teams_conversation or "", "activity_id": card_id}
    if await runtime.store.set_refs_if_missing(hf.id, refs):
        hf.refs.update(refs)
        logger.info("adopted the clicked card as the request's message hf=%s channel=teams", hf.id)


async def _show(runtime: Runtime, hf: HumanFunction, card: Mapping[str, Any]) -> None:
    conversation, activity_id = hf.refs.get("conversation"), hf.refs.get("activity_id")
    if not conversation or not activity_id:
        return
    client: TeamsClient = await runtime.channel_client("teams")
    try:
        await client.edit(str(conversation), str(activity_id), card, summary_of(hf))
    except DeliveryError as exc:
        logger.warning("cannot show the refused answer hf=%s channel=teams: %s", hf.id, exc)


def _conversation(activity: Mapping[str, Any]) -> str:
    conversation = activity.get("conversation")
    value = conversation.get("id") if isinstance(conversation, Mapping) else None
    return f"{value}|" if isinstance(value, str) else "|"
