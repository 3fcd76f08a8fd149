"""The Discord message of a Human Function: its embed, its buttons and selects, and their custom ids.

Pure: built with discord.py's ``Embed`` and ``ui`` classes and turned into the JSON of Discord's REST
API by discord.py itself (``handle_message_parameters``), so rendering needs no client and no network.

What a person sees depends on the schema (``layout_of``): an approval gets Approve / Decline buttons;
one single-select of up to ``MAX_BUTTONS_PER_ROW`` options gets one button per option, of up to
``MAX_SELECT_OPTIONS`` a select menu; one multi-select a select with min/max values; anything else a
"Respond" button that opens a modal (``channels.discord.modal``). Every pending message also has
Decline (asks for an optional reason) and Cancel. Agent text is untrusted: everything shown in markdown
(the embed, ephemeral notes) goes through ``escape``, and ``allowed_mentions`` parses nothing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

import discord
from discord import ui
from discord.http import handle_message_parameters

from channels.discord.text import MAX_BUTTON_LABEL, MAX_OPTION_TEXT, escape, field_hint
from channels.display import approval_field, clip, field_label
from schemas.flat import kind_of, options_of
from schemas.models import HumanFunction

MAX_BUTTONS_PER_ROW = 5
"""Discord's limit of buttons in one action row (a message holds 5 rows)."""

MAX_SELECT_OPTIONS = 25
"""Discord's limit of options in one select menu."""

MAX_SELECT_PLACEHOLDER = 150
"""Discord's limit of a select menu's placeholder."""

CUSTOM_ID_PREFIX = "hg"
"""First part of every custom id humangate puts on a component or modal."""

Layout = Literal["approval", "buttons", "select", "form", "web"]


class Act(StrEnum):
    """What a component or modal of a Human Function does; the middle part of its custom id."""

    APPROVE = "approve"
    RESPOND = "respond"
    """Open the form modal (argument: the step, from 0)."""
    DECLINE = "decline"
    """Open the modal asking for an optional decline reason."""
    CANCEL = "cancel"
    PICK = "pick"
    """Choose one option by button (argument: the option's index)."""
    CHOOSE = "choose"
    """The select menu of a one-select request (values: option indexes)."""
    WEB = "web"
    """Show the person (only them) a link to the web form."""
    REASON = "reason"
    """Submit of the decline modal."""
    FORM = "form"
    """Submit of a form modal (argument: the step)."""


@dataclass(frozen=True, slots=True)
class CustomId:
    """``hg:<hf id>:<act>[:<number>]``: which request, what to do; at most 100 characters."""

    hf_id: str
    act: Act
    arg: int | None = None

    def __str__(self) -> str:
        tail = "" if self.arg is None else f":{self.arg}"
        return f"{CUSTOM_ID_PREFIX}:{self.hf_id}:{self.act.value}{tail}"


_CUSTOM_ID = re.compile(rf"{CUSTOM_ID_PREFIX}:([0-9a-f]{{1,32}}):([a-z]+)(?::(\d{{1,3}}))?")


def parse_custom_id(text: str) -> CustomId:
    """The parts of one of our custom ids; ``ValueError`` for anything else."""
    match = _CUSTOM_ID.fullmatch(text)
    if match is None:
        raise ValueError("not a humangate custom id")
    hf_id, act, arg = match.groups()
    return CustomId(hf_id, Act(act), int(arg) if arg is not None else None)


def select_fits(prop: Mapping[str, Any]) -> bool:
    """Whether a property can be shown in Discord at all (selects hold at most 25 options)."""
    return len(options_of(prop)) <= MAX_SELECT_OPTIONS


def layout_of(schema: Mapping[str, Any]) -> Layout:
    """How a schema is asked on Discord (see the module docstring); ``web`` when a field cannot be."""
    if approval_field(schema):
        return "approval"
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if len(properties) == 1:
        prop = next(iter(properties.values()))
        kind, count = kind_of(prop), len(options_of(prop))
        if kind == "single_select" and count <= MAX_BUTTONS_PER_ROW:
            return "buttons"
        if kind in ("single_select", "multi_select") and count <= MAX_SELECT_OPTIONS:
            return "select"
    return "form" if all(select_fits(prop) for prop in properties.values()) else "web"


def extra_fields(schema: Mapping[str, Any]) -> list[str]:
    """The properties a form modal asks for: all of them, but an approval's boolean (its buttons say)."""
    skip = approval_field(schema)
    return [name for name in schema.get("properties") or {} if name != skip]


def pending_view(hf: HumanFunction) -> ui.View:
    """The buttons and selects of a pending request."""
    schema = hf.request_schema
    view = ui.View(timeout=None)
    layout = layout_of(schema)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if layout == "approval":
        view.add_item(_button(hf, Act.APPROVE, "Approve", discord.ButtonStyle.success))
        others = extra_fields(schema)
        if others:
            fits = all(select_fits(properties[name]) for name in others)
            act, arg = (Act.RESPOND, 0) if fits else (Act.WEB, None)
            view.add_item(_button(hf, act, "Approve with details…", discord.ButtonStyle.primary, arg))
    elif layout == "buttons":
        name, prop = next(iter(properties.items()))
        default = prop.get("default")
        for index, option in enumerate(options_of(prop)):
            style = discord.ButtonStyle.primary if option.value == default else discord.ButtonStyle.secondary
            view.add_item(_button(hf, Act.PICK, clip(option.title, MAX_BUTTON_LABEL), style, index))
    elif layout == "select":
        name, prop = next(iter(properties.items()))
        view.add_item(_select(hf, name, prop))
    else:
        label = "Respond…" if layout == "form" else "Answer in the web form…"
        act, arg = (Act.RESPOND, 0) if layout == "form" else (Act.WEB, None)
        view.add_item(_button(hf, act, label, discord.ButtonStyle.primary, arg))
    row = 1 if layout in ("buttons", "select") else 0
    view.add_item(_button(hf, Act.DECLINE, "Decline…", discord.ButtonStyle.danger, row=row))
    view.add_item(_button(hf, Act.CANCEL, "Cancel", discord.ButtonStyle.secondary, row=row))
    return view


def _button(
    hf: HumanFunction,
    act: Act,
    label: str,
    style: discord.ButtonStyle,
    arg: int | None = None,
    *,
    row: int | None = None,
) -> ui.Button[ui.View]:
    return ui.Button(label=label, style=style, custom_id=str(CustomId(hf.id, act, arg)), row=row)


def _select(hf: HumanFunction, name: str, prop: Mapping[str, Any]) -> ui.Select[ui.View]:
    """One select menu in the message; its values are option indexes (agent values may be long)."""
    options = options_of(prop)
    default = prop.get("default")
    chosen = set(default) if isinstance(default, list) else {default}
    low, high = 1, 1
    if kind_of(prop) == "multi_select":
        low = max(int(prop.get("minItems") or 1), 1)
        high = max(min(int(prop.get("maxItems") or len(options)), len(options)), low)
    hint = field_hint({"properties": {name: prop}, "required": [name]}, name, with_required=False)
    placeholder = f"{field_label(name, prop)}: {hint}"
    return ui.Select(
        custom_id=str(CustomId(hf.id, Act.CHOOSE)),
        placeholder=clip(placeholder, MAX_SELECT_PLACEHOLDER),
        min_values=low,
        max_values=high,
        row=0,
        options=[
            discord.SelectOption(
                label=clip(option.title, MAX_OPTION_TEXT), value=str(index), default=option.value in chosen
            )
            for index, option in enumerate(options)
        ],
    )


def message_payload(embed: discord.Embed, view: ui.View | None, nonce: str | None = None) -> dict[str, Any]:
    """A message's JSON as discord.py sends it: no mention parsed, components removed when ``view``
    is ``None``; with a ``nonce``, Discord returns an earlier message of the bot with the same nonce
    instead of posting again (``enforce_nonce``)."""
    params = handle_message_parameters(
        embeds=[embed], view=view, allowed_mentions=discord.AllowedMentions.none(), nonce=nonce
    )
    payload: dict[str, Any] = dict(params.payload or {})
    payload.pop("tts", None)
    return payload


def note(text: str, buttons: list[ui.Button[ui.View]] | None = None) -> dict[str, Any]:
    """An ephemeral reply (only the person who clicked sees it), as an interaction response."""
    view = ui.View(timeout=None)
    for button in buttons or []:
        view.add_item(button)
    data: dict[str, Any] = {
        "content": clip(text, 2000),
        "flags": discord.MessageFlags(ephemeral=True).value,
        "allowed_mentions": discord.AllowedMentions.none().to_dict(),
        "components": view.to_components(),
    }
    return {"type": discord.InteractionResponseType.channel_message.value, "data": data}


def again_button(hf: HumanFunction, label: str, step: int) -> ui.Button[ui.View]:
    """A button that opens step ``step`` of the form again (after an error, or for the next step)."""
    return _button(hf, Act.RESPOND, label, discord.ButtonStyle.primary, step)


def link_button(label: str, url: str) -> ui.Button[ui.View]:
    return ui.Button(label=label, url=url, style=discord.ButtonStyle.link)


def timestamp(epoch: float, style: Literal["f", "R"]) -> str:
    """A Discord timestamp token: every reader sees it in their own time zone (``R``: "in 3 minutes")."""
    return discord.utils.format_dt(dt.datetime.fromtimestamp(epoch, dt.UTC), style)


def escaped_label(name: str, prop: Mapping[str, Any]) -> str:
    return escape(field_label(name, prop))
