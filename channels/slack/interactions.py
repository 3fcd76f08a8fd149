"""What a click or a modal submission in Slack does: answer, open a modal, or say why not.

``respond`` is the one entry, whichever way the interaction came: the Bolt app's listeners
(``channels.slack.listeners``) call it for a verified, new callback on ``/slack/events`` and for an
envelope read over Socket Mode alike. It returns what to acknowledge it with (``ack()``'s arguments):
the body of the HTTP 200, or the payload of the envelope's ack. A click is acknowledged first and
handled after (Slack wants the ack within 3 s; a modal needs its ``trigger_id`` within 3 s too, so
``views.open`` is the first thing done). A submission is handled before its ack, because the ack
carries the field errors or the closing of the modal.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Mapping
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from slack_sdk.webhook.async_client import AsyncWebhookClient

from channels.approvers import ALREADY_APPROVED, NOT_AN_APPROVER, refusal, refusal_reason
from channels.base import Desk
from channels.display import outcome_summary, sentence_case
from channels.slack.actions import first_action, hf_id_of, identity, parse_interaction, person, user_id_of
from channels.slack.api import RESPONSE_EXCEPTIONS
from channels.slack.blocks import ACTION_PREFIX, CANCEL, DECLINE, OPEN_FORM, RESPOND
from channels.slack.client import API_TIMEOUT, SlackClient
from channels.slack.groups import held_by
from channels.slack.modal import block_errors, form_view, notice_view, reason_view
from channels.slack.text import escape
from schemas.errors import (
    ApprovalRefusedError,
    ClosedError,
    ExpiredError,
    InvalidAnswerError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import Action, HumanFunction

logger = logging.getLogger(__name__)

_REFUSAL_TITLES = {NOT_AN_APPROVER: "Not an approver", ALREADY_APPROVED: "Already approved"}
"""The title of the modal notice of a refused submission, by the refusal (else it is out of turn)."""

NAME_LOOKUP_TIMEOUT = 1.5
"""Seconds the ``users.info`` look-up of who answered may take before the Slack handle is used
(a modal's submission must be acknowledged within 3 s)."""

STORE_AWAY = (RedisConnectionError, RedisTimeoutError, StoreUnavailableError)
"""What a Redis call raises while Redis is away (a restart, a failover)."""

RETRY_PAUSE = 0.1
"""Seconds between two tries of work that found Redis away."""

CLICK_RETRY_SECONDS = 10.0
"""Seconds a click's work (after its ack) is tried again while Redis is away: a Sentinel failover
takes about 2.5 s, a restart a few."""

NOT_RECORDED = (
    "humangate could not handle your answer in time (its store may be unreachable for a moment), so "
    "it was not recorded. Nothing was changed; please try again in a few seconds."
)
"""What the person reads when their interaction could not be handled within Slack's 3 seconds
(Redis away for the whole budget, or a listener that failed), over Socket Mode."""

NOT_ALLOWED = (
    "You are not allowed to answer this request (HUMANGATE_SLACK_ALLOWED_USERS). Nothing was changed."
)
GONE = (
    "This request is no longer known to humangate: it ended, and ended requests are forgotten after "
    "a while (by default a day for an agent with a key, an hour for an anonymous one)."
)
_OPENS = {RESPOND: None, DECLINE: Action.DECLINE, CANCEL: Action.CANCEL}
_CLICKS = "clicks"
"""Where ``Desk.state`` keeps the clicks being handled after their ack (a task nobody references
could be collected before it ends)."""


async def respond(desk: Desk, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Handle an interaction; what to acknowledge it with (``{}``: a plain acknowledgement).

    A click on one of humangate's buttons is handled after its ack, a submission of one of its
    modals before (the reply closes the modal, or shows its errors). Anything else Slack sends the
    app (another app's view closing, an Events API check) is acknowledged and changes nothing.
    """
    kind = payload.get("type")
    if kind == "block_actions" and _ours(first_action(payload).get("action_id")):
        _after_ack(desk, _click_until_stored(desk, payload), hf_id_of(payload))
        return {}
    view = payload.get("view")
    if kind == "view_submission" and isinstance(view, Mapping) and _ours(view.get("callback_id")):
        return await handle_submission(desk, payload)
    if kind == "url_verification" and isinstance(payload.get("challenge"), str):
        return {"challenge": payload["challenge"]}
    return {}


def unavailable(desk: Desk, payload: Mapping[str, Any]) -> dict[str, Any]:
    """What to acknowledge an interaction with when humangate could not handle it in time: a
    submission's modal says so, a click's person is told through ``response_url``."""
    hf_id = hf_id_of(payload) or ""
    if payload.get("type") == "view_submission":
        return _notice("Try again", NOT_RECORDED)
    if payload.get("type") == "block_actions":
        _after_ack(desk, tell(payload.get("response_url"), NOT_RECORDED, hf_id), hf_id)
    return {}


def _ours(name: object) -> bool:
    return isinstance(name, str) and name.startswith(ACTION_PREFIX)


def _after_ack(desk: Desk, work: Coroutine[Any, Any, None], hf_id: str | None) -> None:
    """Run ``work`` once the interaction is acknowledged; its failure is logged, never raised."""

    async def run() -> None:
        try:
            await work
        except Exception:
            logger.exception("a click failed hf=%s channel=slack", hf_id)

    running: set[asyncio.Task[None]] = desk.state.setdefault(_CLICKS, set())
    task = asyncio.create_task(run(), name=f"humangate-slack-click-{hf_id}")
    running.add(task)
    task.add_done_callback(running.discard)


async def _click_until_stored(desk: Desk, payload: Mapping[str, Any]) -> None:
    """``handle_click``, tried again while Redis is away; the person is told if it stays away."""
    deadline = time.monotonic() + CLICK_RETRY_SECONDS
    while True:
        try:
            return await handle_click(desk, payload)
        except STORE_AWAY:
            if time.monotonic() >= deadline:
                await tell(payload.get("response_url"), NOT_RECORDED, hf_id_of(payload) or "")
                raise
        await asyncio.sleep(RETRY_PAUSE)  # a pause between tries, bounded by the deadline


def allowed(desk: Desk, user_id: str) -> bool:
    """Whether ``HUMANGATE_SLACK_ALLOWED_USERS`` (when set) lets this person answer."""
    users = desk.settings.slack_allowed_users
    return not users or user_id in users


async def handle_click(desk: Desk, payload: Mapping[str, Any]) -> None:
    """A button in a request message was clicked (already acknowledged)."""
    action_id = str(first_action(payload).get("action_id") or "")
    hf_id = hf_id_of(payload)
    response_url = payload.get("response_url")
    if action_id == OPEN_FORM or hf_id is None:
        return  # a link button: Slack opened the web form in the browser
    if not allowed(desk, user_id_of(payload)):
        logger.info("refused a click hf=%s channel=slack: user not allowed", hf_id)
        await tell(response_url, NOT_ALLOWED, hf_id)
        return
    try:
        hf = await desk.get(hf_id)
    except UnknownRequestError:
        await tell(response_url, GONE, hf_id)
        return
    await remember_message(desk, hf, payload)
    if not hf.is_pending:
        await tell(response_url, ended_words(hf), hf_id)
        return
    held = await held_by(desk, hf, user_id_of(payload)) if hf.approvers else []
    if (why := refusal(hf, held)) is not None:
        logger.info("refused a click hf=%s channel=slack user=%s: %s", hf_id, user_id_of(payload), why)
        await desk.refused(hf, f"slack:{user_id_of(payload)}", refusal_reason(why))
        await tell(response_url, why, hf_id)
        return
    if action_id in _OPENS:
        await _open_modal(desk, hf, payload, _OPENS[action_id])
        return
    try:
        answer = parse_interaction(hf, payload, await display_name(desk, payload))
        answer = answer.model_copy(update={"person": identity(payload), "held": tuple(held)})
        await desk.answer(hf, answer)
    except ClosedError as exc:
        await tell(response_url, f"{sentence_case(str(exc))}; your click changed nothing.", hf_id)
    except InvalidAnswerError as exc:
        await tell(response_url, f"Your answer was not recorded: {exc}", hf_id)


async def handle_submission(desk: Desk, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A modal was submitted: the arguments of its ack (``{}`` closes the modal)."""
    view = payload.get("view") or {}
    hf_id = hf_id_of(payload)
    if hf_id is None:
        return {}
    if not allowed(desk, user_id_of(payload)):
        logger.info("refused a submission hf=%s channel=slack: user not allowed", hf_id)
        return _notice("Not allowed", NOT_ALLOWED)
    try:
        hf = await desk.get(hf_id)
        held = await held_by(desk, hf, user_id_of(payload)) if hf.approvers else []
        if hf.is_pending and (why := refusal(hf, held)) is not None:
            logger.info(
                "refused a submission hf=%s channel=slack user=%s: %s", hf_id, user_id_of(payload), why
            )
            await desk.refused(hf, f"slack:{user_id_of(payload)}", refusal_reason(why))
            return _notice(_REFUSAL_TITLES.get(why, "Not your turn"), why)
        answer = parse_interaction(hf, payload, await display_name(desk, payload))
        answer = answer.model_copy(update={"person": identity(payload), "held": tuple(held)})
        await desk.answer(hf, answer)
    except UnknownRequestError:
        return _notice("Request ended", GONE)
    except InvalidAnswerError as exc:
        logger.info("invalid answer hf=%s channel=slack fields=%s", hf_id, ",".join(exc.errors))
        return {"response_action": "errors", "errors": block_errors(hf, exc.errors, view)}
    except ApprovalRefusedError as exc:
        return _notice("Not counted", f"{sentence_case(str(exc))}. Nothing was changed.")
    except ClosedError as exc:
        title = "Request expired" if isinstance(exc, ExpiredError) else "Already answered"
        return _notice(title, f"{sentence_case(str(exc))}. Nothing was changed.")
    return {}


async def remember_message(desk: Desk, hf: HumanFunction, payload: Mapping[str, Any]) -> None:
    """Record where the request's message is, from a click on it, if its delivery never could (a
    worker that stopped between posting and recording): the outcome can then be shown there."""
    if hf.refs:
        return
    container = payload.get("container") or {}
    channel, ts = container.get("channel_id"), container.get("message_ts")
    if container.get("type") == "message" and channel and ts:
        if await desk.remember_post(hf.id, {"channel": str(channel), "ts": str(ts)}):
            logger.info("recorded the message of hf=%s channel=slack from a click", hf.id)


def ended_words(hf: HumanFunction) -> str:
    """``This request has already ended: Approved by Ada (U1).``"""
    summary = outcome_summary(hf)
    return f"This request has already ended: {summary.sentence() if summary else hf.status.value}."


async def display_name(desk: Desk, payload: Mapping[str, Any]) -> str:
    """``Ada Lovelace (U123)``: the person's real name from ``users.info``, else their handle."""
    user_id = user_id_of(payload)
    name: str | None = None
    if user_id:
        client: SlackClient = await desk.client()
        try:
            info = await asyncio.wait_for(client.api.users_info(user=user_id), NAME_LOOKUP_TIMEOUT)
            user = info.get("user") or {}
            profile = user.get("profile") or {}
            name = str(profile.get("real_name") or user.get("real_name") or "") or None
        except RESPONSE_EXCEPTIONS as exc:
            logger.info(
                "no real name for %s channel=slack (%s); using the handle", user_id, type(exc).__name__
            )
    return person(payload.get("user"), name)


async def tell(response_url: Any, text: str, hf_id: str) -> None:
    """An ephemeral reply to the person who clicked (only they see it), through ``response_url``."""
    if not isinstance(response_url, str) or not response_url.startswith(("https://", "http://")):
        return
    webhook = AsyncWebhookClient(url=response_url, timeout=int(API_TIMEOUT))
    try:
        await webhook.send(text=escape(text), response_type="ephemeral", replace_original=False)
    except Exception as exc:  # a failed courtesy note must not fail the handler
        logger.warning("cannot reply to the person hf=%s channel=slack (%s)", hf_id, type(exc).__name__)


async def _open_modal(
    desk: Desk, hf: HumanFunction, payload: Mapping[str, Any], action: Action | None
) -> None:
    await desk.started(hf, f"slack:{user_id_of(payload)}")  # opening a modal counts as starting to answer
    form_url = desk.form_url(hf)
    view = form_view(hf, form_url) if action is None else reason_view(hf, action, form_url)
    client: SlackClient = await desk.client()
    try:
        await client.api.views_open(trigger_id=str(payload.get("trigger_id") or ""), view=view)
    except RESPONSE_EXCEPTIONS as exc:
        logger.warning("cannot open a modal hf=%s channel=slack (%s)", hf.id, exc)
        await tell(payload.get("response_url"), "Slack could not open the form; please click again.", hf.id)
        return
    logger.info("opened a modal hf=%s channel=slack", hf.id)


def _notice(title: str, text: str) -> dict[str, Any]:
    return {"response_action": "update", "view": notice_view(title, text)}
