"""A form answered in the chat, one field at a time, as replies in the request's thread.

Respond starts a conversation of one person with one request; Decline (and Cancel, during one)
starts one that asks only for an optional reason. Its state is the person's draft
(``Desk.drafts``, kept until the request's deadline, keyed ``telegram:<user id>``), so every process
reads the same conversation and two people answering the same request each have their own: the
first Submit ends the request, and the other's Submit is told how it ended.

Each question is a message replying in the thread: buttons for a yes/no, a choice or a multiple
choice (toggle, then Done; each tap redraws the buttons with a check mark on the options chosen),
``ForceReply`` for text and numbers. A typed value is checked by the rules every channel uses
(``schemas.answers``: ``coerce_text_values`` then ``Desk.check_answer`` on that one field), and a
wrong one is refused naming the rule and asked again. ``/skip`` leaves an optional
field out (or gives no reason), ``/cancel`` cancels the request. Then a summary with Submit and Cancel.

A button of a question carries its field's index, so a tap on an older question changes nothing.
The draft keeps the id of the last update it applied, so an update applied again (a poller taken over
before it recorded its offset) does not answer a question twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from channels.base import Desk
from channels.display import (
    clip,
    display_value,
    field_label,
    length_words,
    number_noun,
    pattern_words,
    range_text,
)
from channels.telegram import buttons as b
from channels.telegram.api import TelegramApi
from channels.telegram.message import escape
from channels.telegram.people import send, user_mention
from schemas.answers import coerce_text_values
from schemas.errors import DeliveryError, InvalidAnswerError
from schemas.flat import is_required, kind_of, options_of
from schemas.models import HumanFunction, Person

logger = logging.getLogger(__name__)

SKIP_COMMAND = "/skip"
CANCEL_COMMAND = "/cancel"
OPTION_BASE = 1000
"""A question's option button carries ``field index * OPTION_BASE + option index``."""
CHOSEN_MARK = "\u2705 "
"""Before an option of a multiple choice once chosen (the buttons are redrawn at each tap)."""
MAX_REASON = 1000
"""Characters of a decline or cancel reason kept."""

FORM, DECLINE, CANCEL = "form", "decline", "cancel"
_META = "\x00"  # a draft key no property name can take (flat schemas refuse control characters)


@dataclass
class Talk:
    """One person's conversation with one request."""

    mode: str = FORM
    at: int = 0
    """The index of the field asked now (``len(fields)``: the summary)."""
    values: dict[str, list[str]] = field(default_factory=dict)
    last_update: int = -1
    thread: list[Any] = field(default_factory=list)
    """``[chat id, message id]`` of the message questions reply to."""


def fields_of(hf: HumanFunction) -> list[tuple[str, Mapping[str, Any]]]:
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    return list(properties.items())


def draft_key(person: Person) -> str:
    return f"telegram:{person.id}"


async def load(desk: Desk, hf: HumanFunction, person: Person) -> Talk | None:
    """The person's conversation with ``hf``, if one is going on."""
    raw = await desk.drafts.load(hf.id, draft_key(person))
    if not raw:
        return None
    meta = {key[1:]: value[0] if value else "" for key, value in raw.items() if key.startswith(_META)}
    try:
        thread = [int(part) for part in meta.get("thread", "").split(":") if part]
        return Talk(
            mode=meta.get("mode", FORM),
            at=int(meta.get("at", "0")),
            values={key: value for key, value in raw.items() if not key.startswith(_META)},
            last_update=int(meta.get("last", "-1")),
            thread=thread,
        )
    except ValueError:
        return None


async def save(desk: Desk, hf: HumanFunction, person: Person, talk: Talk) -> None:
    meta = {
        f"{_META}mode": [talk.mode],
        f"{_META}at": [str(talk.at)],
        f"{_META}last": [str(talk.last_update)],
        f"{_META}thread": [":".join(str(part) for part in talk.thread)],
    }
    await desk.drafts.save(hf, draft_key(person), {**talk.values, **meta})


async def drop(desk: Desk, hf: HumanFunction, person: Person) -> None:
    await desk.drafts.drop(hf.id, draft_key(person))


async def begin(
    desk: Desk,
    api: TelegramApi,
    hf: HumanFunction,
    person: Person,
    mode: str,
    thread: list[Any],
    update_id: int,
) -> None:
    """Start (or restart) ``person``'s conversation and ask its first question."""
    talk = Talk(mode=mode, thread=thread, last_update=update_id)
    await save(desk, hf, person, talk)
    await ask(api, hf, person, talk)


async def ask(api: TelegramApi, hf: HumanFunction, person: Person, talk: Talk, note: str = "") -> None:
    """Send the question ``talk`` is at (a field, the summary, or the reason), in the thread."""
    chat, reply_to = [*talk.thread, None, None][:2]
    prefix = f"{user_mention(person)} " + (f"{escape(note)}\n" if note else "")
    if talk.mode != FORM:
        verb = "declining" if talk.mode == DECLINE else "canceling"
        text = f"{prefix}Why are you {verb}? Reply with a reason, or {SKIP_COMMAND} to give none."
        await send(api, chat, text, reply_to=reply_to, markup=_force_reply("A reason"), hf_id=hf.id)
        return
    fields = fields_of(hf)
    if talk.at >= len(fields):
        await send(
            api, chat, prefix + summary_text(hf, talk), reply_to=reply_to, markup=_summary(hf), hf_id=hf.id
        )
        return
    name, prop = fields[talk.at]
    required = is_required(hf.request_schema, name)
    place = f"{talk.at + 1} of {len(fields)}" + ("" if required else ", optional")
    head = f"<b>{escape(field_label(name, prop))}</b> ({place})"
    description = prop.get("description")
    lines = [prefix + head]
    if isinstance(description, str) and description.strip():
        lines.append(escape(clip(description, 500)))
    kind = kind_of(prop)
    if kind in ("boolean", "single_select", "multi_select"):
        lines.append("Tap each that applies, then Done." if kind == "multi_select" else "Tap one.")
        markup: dict[str, Any] = {"inline_keyboard": _choices(hf, talk, prop, required)}
    else:
        rule = hint(prop, kind)
        skip = f", {SKIP_COMMAND} to leave it out" if not required else ""
        lines.append(f"Reply with {escape(rule)}{skip}, or {CANCEL_COMMAND} to cancel the request.")
        markup = _force_reply(field_label(name, prop))
    await send(api, chat, "\n".join(lines), reply_to=reply_to, markup=markup, hf_id=hf.id)


def hint(prop: Mapping[str, Any], kind: str) -> str:
    """What a typed value must be, in words: ``a whole number between 1 and 5``."""
    if kind in ("number", "integer"):
        bounds = range_text(prop.get("minimum"), prop.get("maximum"), between=True)
        return f"{number_noun(kind)} {bounds}".strip()
    words = [w for w in (length_words(prop), pattern_words(prop)) if w]
    fmt = prop.get("format")
    what = {"email": "an email address", "uri": "a link", "date": "a date like 2026-11-22"}.get(
        str(fmt), "a date and time like 2026-11-22T10:30:00Z" if fmt == "date-time" else "text"
    )
    return f"{what} ({', '.join(words)})" if words else what


def summary_text(hf: HumanFunction, talk: Talk) -> str:
    lines = ["<b>Your answer</b>"]
    for name, prop in fields_of(hf):
        shown = _shown(hf, name, prop, talk.values.get(name))
        lines.append(f"{escape(field_label(name, prop))}: {escape(shown)}")
    lines.append("Submit it?")
    return "\n".join(lines)


def _shown(hf: HumanFunction, name: str, prop: Mapping[str, Any], texts: list[str] | None) -> str:
    if texts is None:
        return "No answer"
    try:
        value = coerce_text_values({"properties": {name: prop}}, {name: texts}).get(name)
    except InvalidAnswerError:
        return " ".join(texts)
    return "No answer" if value is None else display_value(prop, value)


async def on_text(
    desk: Desk, api: TelegramApi, hf: HumanFunction, person: Person, talk: Talk, text: str, update_id: int
) -> str | None:
    """A typed reply in ``talk``: store it and ask the next question, or re-ask naming the rule.
    Returns a reason given for decline/cancel (``""`` for none) once the conversation asks to end
    the request that way; ``None`` otherwise."""
    talk.last_update = update_id
    words = text.strip()
    if talk.mode != FORM:
        return "" if words == SKIP_COMMAND else clip(words, MAX_REASON)
    if words == CANCEL_COMMAND:
        talk.mode = CANCEL
        await save(desk, hf, person, talk)
        await ask(api, hf, person, talk)
        return None
    fields = fields_of(hf)
    if talk.at >= len(fields):
        await ask(api, hf, person, talk, "Tap Submit or Cancel below.")
        return None
    name, prop = fields[talk.at]
    required = is_required(hf.request_schema, name)
    kind = kind_of(prop)
    if kind in ("boolean", "single_select", "multi_select"):
        await ask(api, hf, person, talk, "Tap one of the buttons.")
        return None
    if words == SKIP_COMMAND:
        if required:
            await ask(api, hf, person, talk, f"Not recorded: {field_label(name, prop)} is required.")
            return None
        talk.values.pop(name, None)
    else:
        reason = await check_field(desk, hf, name, prop, required, text)
        if reason is not None:
            logger.info("invalid reply hf=%s channel=telegram field=%s", hf.id, name)
            await save(desk, hf, person, talk)
            await ask(api, hf, person, talk, f"Not recorded: {field_label(name, prop)} {reason}. Try again.")
            return None
        talk.values[name] = [text]
    talk.at += 1
    await save(desk, hf, person, talk)
    await ask(api, hf, person, talk)
    return None


async def check_field(
    desk: Desk, hf: HumanFunction, name: str, prop: Mapping[str, Any], required: bool, text: str
) -> str | None:
    """Why ``text`` is not a valid value of field ``name`` (the words every channel uses), or ``None``."""
    schema = {"type": "object", "properties": {name: dict(prop)}, "required": [name] if required else []}
    try:
        await desk.check_answer(schema, coerce_text_values(schema, {name: [text]}))
    except InvalidAnswerError as exc:
        return exc.errors.get(name) or next(iter(exc.errors.values()), "is not valid")
    return None


async def on_tap(
    desk: Desk,
    api: TelegramApi,
    hf: HumanFunction,
    person: Person,
    talk: Talk,
    tap: b.Tap,
    question: Mapping[str, Any] | None = None,
) -> str:
    """A button of ``question`` (the message tapped); returns what to tell the person who tapped."""
    fields = fields_of(hf)
    index = tap.index if tap.index is not None else -1
    at = index // OPTION_BASE if tap.code in (b.OPTION, b.TOGGLE) else index
    if tap.code in (b.YES, b.NO, b.OPTION, b.TOGGLE, b.DONE, b.SKIP) and (talk.mode != FORM or at != talk.at):
        return "That question was already answered."
    if tap.code == b.CANCEL:
        talk.mode = CANCEL
        await save(desk, hf, person, talk)
        await ask(api, hf, person, talk)
        return "Reply with a reason, or /skip."
    if talk.at >= len(fields):
        return "Tap Submit or Cancel."
    name, prop = fields[talk.at]
    options = options_of(prop)
    if tap.code == b.TOGGLE:
        chosen = talk.values.setdefault(name, [])
        value = options[index % OPTION_BASE].value
        chosen.remove(value) if value in chosen else chosen.append(value)
        await save(desk, hf, person, talk)
        await show_chosen(api, hf, talk, prop, question)
        return "Chosen: " + (", ".join(chosen) or "nothing yet")
    if tap.code == b.YES or tap.code == b.NO:
        talk.values[name] = ["true" if tap.code == b.YES else "false"]
    elif tap.code == b.OPTION:
        talk.values[name] = [options[index % OPTION_BASE].value]
    elif tap.code == b.SKIP:
        talk.values.pop(name, None)
    elif tap.code == b.DONE:
        reason = (
            await check_field(desk, hf, name, prop, is_required(hf.request_schema, name), "")
            if not talk.values.get(name)
            else await _check_list(desk, hf, name, prop, talk.values[name])
        )
        if reason is not None:
            return f"{field_label(name, prop)} {reason}"
    talk.at += 1
    await save(desk, hf, person, talk)
    await ask(api, hf, person, talk)
    return "Noted."


async def show_chosen(
    api: TelegramApi,
    hf: HumanFunction,
    talk: Talk,
    prop: Mapping[str, Any],
    question: Mapping[str, Any] | None,
) -> None:
    """Redraw a multiple choice's buttons with a check mark on each option chosen so far."""
    chat = (question or {}).get("chat") or {}
    if not isinstance(chat, Mapping) or "id" not in chat or "message_id" not in (question or {}):
        return
    required = is_required(hf.request_schema, fields_of(hf)[talk.at][0])
    params = {
        "chat_id": chat["id"],
        "message_id": (question or {})["message_id"],
        "reply_markup": {"inline_keyboard": _choices(hf, talk, prop, required)},
    }
    try:
        await api.call("editMessageReplyMarkup", params)
    except DeliveryError as exc:  # the choice is kept; only its marks are not shown
        logger.info("cannot show the choices hf=%s channel=telegram (%s)", hf.id, exc)


async def _check_list(
    desk: Desk, hf: HumanFunction, name: str, prop: Mapping[str, Any], values: list[str]
) -> str | None:
    schema = {"type": "object", "properties": {name: dict(prop)}, "required": []}
    try:
        await desk.check_answer(schema, coerce_text_values(schema, {name: values}))
    except InvalidAnswerError as exc:
        return next(iter(exc.errors.values()), "is not valid")
    return None


def _choices(
    hf: HumanFunction, talk: Talk, prop: Mapping[str, Any], required: bool
) -> list[list[dict[str, str]]]:
    kind = kind_of(prop)
    at = talk.at
    if kind == "boolean":
        rows = [[b.button("Yes", hf.id, b.YES, at), b.button("No", hf.id, b.NO, at)]]
    elif kind == "single_select":
        rows = [
            [b.button(clip(o.title, 60), hf.id, b.OPTION, at * OPTION_BASE + i)]
            for i, o in enumerate(options_of(prop))
        ]
    else:
        chosen = talk.values.get(fields_of(hf)[at][0]) or []
        rows = [
            [b.button(_mark(o.value in chosen) + clip(o.title, 60), hf.id, b.TOGGLE, at * OPTION_BASE + i)]
            for i, o in enumerate(options_of(prop))
        ]
        rows.append([b.button("Done", hf.id, b.DONE, at)])
    if not required and kind != "multi_select":
        rows.append([b.button("Skip", hf.id, b.SKIP, at)])
    rows.append([b.button("Cancel the request", hf.id, b.CANCEL)])
    return rows


def _mark(chosen: bool) -> str:
    return CHOSEN_MARK if chosen else ""


def _summary(hf: HumanFunction) -> dict[str, Any]:
    return {"inline_keyboard": [[b.button("Submit", hf.id, b.SUBMIT), b.button("Cancel", hf.id, b.CANCEL)]]}


def _force_reply(placeholder: str) -> dict[str, Any]:
    return {"force_reply": True, "selective": True, "input_field_placeholder": clip(placeholder, 64)}


def submitted(hf: HumanFunction, talk: Talk) -> dict[str, Any]:
    """The typed content of a summary's Submit; raises ``InvalidAnswerError``."""
    return coerce_text_values(hf.request_schema, talk.values)


def first_wrong(hf: HumanFunction, errors: Mapping[str, str]) -> int:
    """The index of the first field ``errors`` names (``0`` when it names none)."""
    for index, (name, _) in enumerate(fields_of(hf)):
        if name in errors:
            return index
    return 0
