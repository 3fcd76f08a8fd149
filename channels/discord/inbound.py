"""Discord's interactions (PING, button and select clicks, modal submits), however they arrive.

``respond`` is the one handler: it takes an interaction as Discord sends it and returns the
interaction response. Two transports feed it. Over HTTP (``HUMANGATE_DISCORD_INBOUND=http``),
``POST /discord/interactions`` (``interactions``) is verified first, by the gateway's webhook opening
(Ed25519 over timestamp + body with ``DISCORD_PUBLIC_KEY``, fresh within ``SIGNATURE_MAX_AGE``;
else 401), applied once (``Desk.first_delivery``), and the response is its body. Over Discord's
Gateway (``gateway``), ``channels.discord.connection`` reads the same interaction from
``INTERACTION_CREATE`` and posts the same response to the interaction callback. A click
that answers goes through ``Desk.answer`` like every channel's answer and gets the ended message
back (``UPDATE_MESSAGE``); one that asks for input gets a modal; errors, refusals and late clicks get an
ephemeral note only the clicker sees. Nothing is recorded for a user outside
``HUMANGATE_DISCORD_ALLOWED_USERS`` / ``_ALLOWED_ROLES`` (when set).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.approvers import refusal, refusal_reason
from channels.base import Desk, Inbound, RenderContext
from channels.budget import Reply
from channels.discord.components import Act, CustomId, again_button, link_button, note, parse_custom_id
from channels.discord.deferral import UPDATE_MESSAGE, send_late, within_budget
from channels.discord.embed import render_message
from channels.discord.interaction import (
    SIGNATURE_MAX_AGE,
    answered_by,
    form_answer,
    held,
    identity,
    is_allowed,
    parse_interaction,
    person,
)
from channels.discord.modal import form_modal, form_steps, reason_modal, step_of, submitted_values
from channels.discord.rest import NO_MENTIONS, quiet_response
from channels.discord.text import escape
from channels.display import field_label, outcome_summary, sentence_case
from schemas.errors import (
    ApprovalRefusedError,
    ClosedError,
    InvalidAnswerError,
    InvalidJsonError,
    InvalidRequestError,
    UnknownRequestError,
)
from schemas.json_text import read_json
from schemas.models import HumanFunction

logger = logging.getLogger(__name__)

PING, COMPONENT, MODAL_SUBMIT = 1, 3, 5
"""Discord interaction types handled here."""
PONG, MODAL = 1, 9
"""Discord interaction response types (the others are in ``channels.discord.deferral``)."""
EPHEMERAL = 64
"""Message flag of a message only its recipient sees."""

NOT_ALLOWED = "You are not allowed to answer this request. Ask whoever runs humangate to add you."


async def interactions(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """A verified interaction: PONG to a PING, else applied once and answered."""
    try:
        interaction = _interaction(inbound.body)
    except InvalidJsonError as exc:  # refused as any malformed request, naming the rule
        raise InvalidRequestError(str(exc)) from None
    if interaction is None:
        raise InvalidRequestError("the body must be a JSON interaction object with a numeric type")
    if interaction["type"] != PING:
        signature = inbound.headers["x-signature-ed25519"].lower()
        if not await desk.first_delivery(signature, 2 * SIGNATURE_MAX_AGE):
            logger.info("replayed interaction not applied again channel=discord")
            return JSONResponse(note("This interaction was already handled."))
    return JSONResponse(quiet_response(await respond(desk, interaction)))


def _interaction(body: bytes) -> dict[str, Any] | None:
    """The interaction object of a body; ``None`` if it is JSON of another shape."""
    data = read_json(body)
    return data if is_interaction(data) else None


def is_interaction(data: object) -> bool:
    """Whether ``data`` has an interaction's shape: an object with a numeric ``type``."""
    kind = data.get("type") if isinstance(data, dict) else None
    return isinstance(kind, int) and not isinstance(kind, bool)


async def respond(desk: Desk, interaction: Mapping[str, Any]) -> Reply:
    """The interaction response to ``interaction`` (from an authenticated transport, applied once):
    PONG to a PING, else what the click or submit does."""
    if interaction["type"] == PING:
        return {"type": PONG}
    data = interaction.get("data") if isinstance(interaction.get("data"), Mapping) else {}
    if interaction["type"] not in (COMPONENT, MODAL_SUBMIT):
        return note("humangate only handles its own buttons, menus and forms.")
    try:
        custom_id = parse_custom_id(str((data or {}).get("custom_id", "")))
        hf = await desk.get(custom_id.hf_id)
    except (ValueError, UnknownRequestError):
        return note("This request no longer exists (or this is not one of humangate's buttons).")
    user_id = person(interaction)[0]
    logger.info("interaction hf=%s channel=discord act=%s user=%s", hf.id, custom_id.act.value, user_id)
    if not is_allowed(interaction, desk.settings):
        logger.info("refused a user not allowed hf=%s channel=discord user=%s", hf.id, user_id)
        return note(NOT_ALLOWED)
    await remember_message(desk, hf, interaction)
    if not hf.is_pending:
        return _ended(hf)
    if (why := refusal(hf, held(interaction))) is not None:
        logger.info("refused a click hf=%s channel=discord user=%s: %s", hf.id, user_id, why)
        await desk.refused(hf, f"discord:user:{user_id}", refusal_reason(why))
        return note(why)
    if custom_id.act in (Act.RESPOND, Act.DECLINE):
        await desk.started(hf, f"discord:user:{user_id}")  # opening a modal counts as starting to answer
    if custom_id.act is Act.RESPOND:
        values = await desk.drafts.load(hf.id, user_id)
        return {"type": MODAL, "data": form_modal(hf, custom_id.arg or 0, values)}
    if custom_id.act is Act.DECLINE:
        return {"type": MODAL, "data": reason_modal(hf)}
    if custom_id.act is Act.WEB:
        link = link_button("Open the web form", desk.form_url(hf))
        return note("This request is answered in the web form; the link is shown only to you.", [link])

    async def late(reply: Reply) -> None:
        rest = await desk.client()
        app_id = desk.settings.discord_application_id or ""
        await send_late(rest, app_id, str(interaction.get("token", "")), reply)

    work = _answer(desk, hf, interaction, custom_id)
    return await within_budget(work, late, label=f"hf={hf.id}")


async def _answer(
    desk: Desk, hf: HumanFunction, interaction: Mapping[str, Any], custom_id: CustomId
) -> Reply:
    """Record the answer a click or submit gives; the reply says how it went."""
    user_id = person(interaction)[0]
    drafts = desk.drafts
    values: dict[str, list[str]] | None = None
    try:
        if custom_id.act is Act.FORM:
            step, all_steps = custom_id.arg or 0, form_steps(hf.request_schema)
            asked = set(all_steps[min(step, len(all_steps) - 1)])
            earlier = {k: v for k, v in (await drafts.load(hf.id, user_id)).items() if k not in asked}
            values = earlier | submitted_values(hf, interaction.get("data") or {})
            steps = len(all_steps)
            if step + 1 < steps:
                await drafts.save(hf, user_id, values)
                label = f"Continue: step {step + 2} of {steps}"
                return note(f"Step {step + 1} of {steps} is saved.", [again_button(hf, label, step + 1)])
            answer = form_answer(hf, values, answered_by(interaction))
            answer = answer.model_copy(update={"person": identity(interaction)})
        else:
            answer = parse_interaction(hf, interaction)
        ended = await desk.answer(hf, answer.model_copy(update={"held": tuple(held(interaction))}))
    except InvalidAnswerError as exc:
        if values is not None:
            await drafts.save(hf, user_id, values)
        logger.info("invalid answer hf=%s channel=discord fields=%s", hf.id, ",".join(exc.errors))
        return _invalid(hf, exc, with_retry=custom_id.act is Act.FORM)
    except ApprovalRefusedError as exc:
        return note(f"{sentence_case(str(exc))}; nothing was changed.")
    except ClosedError:
        return _ended(await desk.get(hf.id))
    except UnknownRequestError:
        return note("This request no longer exists.")
    if values is not None:
        await drafts.drop(hf.id, user_id)
    message = interaction.get("message") if isinstance(interaction.get("message"), Mapping) else None
    if message is not None and int(message.get("flags") or 0) & EPHEMERAL:
        # A modal opened from one of our ephemeral notes: that note is what gets updated.
        summary = outcome_summary(ended)
        text = f"Your answer was recorded: {escape(summary.sentence())}." if summary else "Recorded."
        data = {"content": text, "components": [], "embeds": [], "allowed_mentions": NO_MENTIONS}
        return {"type": UPDATE_MESSAGE, "data": data}
    ctx = RenderContext(form_url=desk.form_url(ended), now=desk.now())
    return {"type": UPDATE_MESSAGE, "data": render_message(ended, ctx)}


async def remember_message(desk: Desk, hf: HumanFunction, interaction: Mapping[str, Any]) -> None:
    """Record where the request's message is, from an interaction on it, if its delivery never
    could (a worker that stopped between posting and recording)."""
    message = interaction.get("message")
    if hf.refs or not isinstance(message, Mapping) or int(message.get("flags") or 0) & EPHEMERAL:
        return
    channel_id = message.get("channel_id") or interaction.get("channel_id")
    if channel_id and message.get("id"):
        refs = {"channel_id": str(channel_id), "message_id": str(message["id"])}
        if await desk.remember_post(hf.id, refs):
            logger.info("recorded the message of hf=%s channel=discord from an interaction", hf.id)


def _ended(hf: HumanFunction) -> Reply:
    """What a click on an ended request gets: how it ended, and by whom."""
    summary = outcome_summary(hf)
    ended = f" ({escape(summary.sentence())})" if summary else ""
    return note(f"Your answer was not recorded: this request has already ended{ended}.")


def _invalid(hf: HumanFunction, exc: InvalidAnswerError, *, with_retry: bool) -> Reply:
    """An ephemeral list of what is wrong, field by field, with a button back to the form."""
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    lines = []
    for name, reason in exc.errors.items():
        label = field_label(name, properties[name]) if name in properties else "Form"
        lines.append(f"• **{escape(label)}**: {escape(reason)}")
    text = "Your answer was not recorded. Please fix:\n" + "\n".join(lines)
    if not with_retry:
        return note(text)
    first = next(iter(exc.errors))
    step = step_of(hf.request_schema, first) if first in properties else 0
    return note(text, [again_button(hf, "Fix my answer", step)])
