"""``POST /teams/messages``: the bot's messaging endpoint, where Teams sends clicks on humangate's cards.

Every activity is authenticated first, by the gateway's webhook opening (``TeamsChannel.verify_inbound``:
the Bot Framework JWT, with the OpenID keys fetched when missing, stale or naming an unknown
``kid``); any failure is a 401, never a 500. A click is applied once (``Desk.first_delivery``, keyed by
the activity's id for as long as its token is accepted); a replay gets the card as it is now.

An ``Action.Execute`` click (an ``adaptiveCard/action`` invoke) is answered in the HTTP response
with the card to show the person who clicked: the reason card of Decline…, the card again with
each invalid field's error, or the ended card, within ``ANSWER_BUDGET`` (Teams gives up after 5 s;
slower work finishes in the background and the card is updated for everyone as usual). The
``Action.Submit`` fallback arrives as a message, answered with an empty 200; its outcome reaches the
card through the usual update. Other activities (installs, mentions) are acknowledged and ignored.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.approvers import approves, refusal, refusal_reason
from channels.base import Desk, Inbound, RenderContext
from channels.budget import Reply
from channels.budget import within_budget as budget_
from channels.display import sentence_case
from channels.teams.actions import (
    CardAction,
    UnreadableFieldsError,
    answer_of,
    card_action,
    held,
    identity,
    is_allowed,
    person,
)
from channels.teams.auth import Verified
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
from channels.teams.inputs import typed_values
from schemas.errors import (
    ClosedError,
    DeliveryError,
    InvalidAnswerError,
    InvalidRequestError,
    UnknownRequestError,
)
from schemas.models import Answer, HumanFunction

if TYPE_CHECKING:
    from channels.teams.connector import TeamsClient  # imported by the channel's connect, when used

logger = logging.getLogger(__name__)

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


async def messages(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """A verified activity (``inbound.proof``): a click applied once and answered; others ignored."""
    verified: Verified = inbound.proof
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
        raise InvalidRequestError("the activity has no id")
    window = max(1, math.ceil(verified.expires - desk.now()))
    if not await desk.first_delivery(_conversation(activity) + activity_id, window):
        logger.info("replayed activity not applied again hf=%s channel=teams", action.hf_id)
        return JSONResponse(await _current(desk, action)) if action.execute else Response(status_code=200)
    if action.execute:
        return JSONResponse(await within_budget(_execute(desk, action, activity), action.hf_id))
    await _submit(desk, action, activity)
    return Response(status_code=200)


def card_reply(card: Mapping[str, Any]) -> Reply:
    """The invoke response that shows ``card`` to the person who clicked."""
    return {"statusCode": 200, "type": CARD, "value": dict(card)}


def message_reply(text: str) -> Reply:
    """The invoke response that shows a short message instead of a new card."""
    return {"statusCode": 200, "type": MESSAGE, "value": text}


async def within_budget(work: Coroutine[Any, Any, Reply], hf_id: str, budget: float = ANSWER_BUDGET) -> Reply:
    """``work``'s reply if it is ready within ``budget`` seconds; else a message saying the answer
    is being recorded, while the work goes on (``channels.budget``)."""
    fallback = message_reply(STILL_WORKING)
    return await budget_(work, budget=budget, fallback=fallback, channel="teams", label=f"hf={hf_id}")


def _context(desk: Desk, hf: HumanFunction) -> RenderContext:
    return RenderContext(form_url=desk.form_url(hf), now=desk.now())


async def _current(desk: Desk, action: CardAction) -> Reply:
    try:
        hf = await desk.get(action.hf_id)
    except UnknownRequestError:
        return message_reply(GONE)
    return card_reply(render_card(hf, _context(desk, hf)))


async def _execute(desk: Desk, action: CardAction, activity: Mapping[str, Any]) -> Reply:
    """Apply an ``Action.Execute`` click; the reply is the card the clicker sees next."""
    try:
        hf = await desk.get(action.hf_id)
    except UnknownRequestError:
        return message_reply(GONE)
    object_id, _ = person(activity)
    ctx = _context(desk, hf)
    logger.info("click hf=%s channel=teams verb=%s user=%s", hf.id, action.verb, object_id or "?")
    if not is_allowed(object_id, desk.settings.teams_allowed_users):
        logger.info("refused a user not allowed hf=%s channel=teams user=%s", hf.id, object_id or "?")
        return card_reply(render_card(hf, ctx, notice=NOT_ALLOWED))
    approver = approves(hf, held(activity))
    if action.verb == REFRESH:
        if approver:  # someone who may not answer does not start answering (nothing changes)
            await desk.started(hf, f"teams:{object_id}")  # the person has the card in front of them
        return card_reply(render_card(hf, ctx))
    if hf.is_pending and (why := refusal(hf, held(activity))) is not None:
        logger.info("refused a click hf=%s channel=teams user=%s: %s", hf.id, object_id or "?", why)
        await desk.refused(hf, f"teams:{object_id}", refusal_reason(why))
        return card_reply(render_card(hf, ctx, notice=why))
    if not hf.is_pending:
        return card_reply(render_card(hf, ctx, notice=TOO_LATE))
    if action.verb == ASK_REASON:
        await desk.started(hf, f"teams:{object_id}")
        return card_reply(reason_card(hf, ctx))
    await _adopt(desk, hf, activity)
    try:
        ended = await desk.answer(hf, await _answer_of(desk, hf, action, activity))
    except InvalidAnswerError as exc:
        logger.info("invalid answer hf=%s channel=teams fields=%s", hf.id, ",".join(exc.errors))
        typed = typed_values(hf.request_schema, action.data)
        return card_reply(render_card(hf, ctx, typed=typed, errors=exc.errors))
    except ClosedError as exc:
        current = await desk.get(hf.id)
        notice = f"{sentence_case(str(exc))}; your click changed nothing."
        return card_reply(render_card(current, ctx, notice=notice))
    return card_reply(render_card(ended, ctx))


async def _submit(desk: Desk, action: CardAction, activity: Mapping[str, Any]) -> None:
    """Apply an ``Action.Submit`` click; a refused one is shown by editing the card."""
    try:
        hf = await desk.get(action.hf_id)
    except UnknownRequestError:
        return
    object_id, _ = person(activity)
    why = refusal(hf, held(activity)) if hf.is_pending else None
    if why is not None:
        await desk.refused(hf, f"teams:{object_id}", refusal_reason(why))
    allowed = is_allowed(object_id, desk.settings.teams_allowed_users) and why is None
    if not allowed or not hf.is_pending or action.verb not in ANSWERS:
        logger.info("submit changed nothing hf=%s channel=teams user=%s", hf.id, object_id or "?")
        return
    await _adopt(desk, hf, activity)
    try:
        await desk.answer(hf, await _answer_of(desk, hf, action, activity))
    except InvalidAnswerError as exc:
        typed = typed_values(hf.request_schema, action.data)
        card = render_card(hf, _context(desk, hf), typed=typed, errors=exc.errors)
        await _show(desk, await desk.get(hf.id), card)
    except ClosedError:
        pass  # the update of whoever won shows the outcome


async def _answer_of(
    desk: Desk, hf: HumanFunction, action: CardAction, activity: Mapping[str, Any]
) -> Answer:
    """``answer_of``, whose refusal names every failing field at once: the inputs that could not be
    read, and what the answer check says of the others. That check matches the agent's patterns, so
    it runs off the event loop, within its budget (``Desk.check_answer``), as for every channel."""
    try:
        answer = answer_of(hf, action, person(activity)[1])
        return answer.model_copy(update={"person": identity(activity), "held": tuple(held(activity))})
    except UnreadableFieldsError as exc:
        unreadable = exc.errors
        readable = exc.readable
    try:
        await desk.check_answer(hf.request_schema, readable)
    except InvalidAnswerError as exc:
        raise InvalidAnswerError(exc.errors | unreadable) from None
    raise InvalidAnswerError(dict(unreadable))


async def _adopt(desk: Desk, hf: HumanFunction, activity: Mapping[str, Any]) -> None:
    """Record the clicked card as the request's message when no delivery recorded one, so that its
    outcome is shown there (a post whose response never came back)."""
    card_id = activity.get("replyToId")
    if hf.refs or not isinstance(card_id, str) or not card_id:
        return
    refs = {"conversation": hf.target or desk.settings.teams_conversation or "", "activity_id": card_id}
    if await desk.remember_post(hf.id, refs):
        hf.refs.update(refs)
        logger.info("adopted the clicked card as the request's message hf=%s channel=teams", hf.id)


async def _show(desk: Desk, hf: HumanFunction, card: Mapping[str, Any]) -> None:
    conversation, activity_id = hf.refs.get("conversation"), hf.refs.get("activity_id")
    if not conversation or not activity_id:
        return
    client: TeamsClient = await desk.client()
    try:
        await client.edit(str(conversation), str(activity_id), card, summary_of(hf))
    except DeliveryError as exc:
        logger.warning("cannot show the refused answer hf=%s channel=teams: %s", hf.id, exc)


def _conversation(activity: Mapping[str, Any]) -> str:
    conversation = activity.get("conversation")
    value = conversation.get("id") if isinstance(conversation, Mapping) else None
    return f"{value}|" if isinstance(value, str) else "|"
