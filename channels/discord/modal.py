"""Discord modals of a Human Function, and reading what a person submitted in them.

A form modal holds at most ``MAX_MODAL_FIELDS`` fields, each a discord.py ``ui.Label`` around one
input: text, numbers, dates... a ``TextInput`` with Discord-side length limits; a required boolean a
Yes/No ``RadioGroup``, an optional one a ``Checkbox``; a single-select a ``RadioGroup`` (2 to 10
options) or a ``Select``; a multi-select a ``CheckboxGroup`` (up to 10 options) or a ``Select`` with
min/max values. Longer forms are asked in steps of that size. Option values sent to Discord are
option indexes, because agents' values may be longer than Discord allows.

``submitted_values`` turns a MODAL_SUBMIT's data into the texts ``schemas.answers.coerce_text_values``
takes (field name -> strings), so Discord answers are typed and validated like every channel's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import discord
from discord import ui

from channels.discord.components import Act, CustomId, extra_fields
from channels.discord.text import FORMAT_EXAMPLES, MAX_OPTION_TEXT, field_hint
from channels.display import clip, field_label
from schemas.errors import InvalidAnswerError
from schemas.flat import Option, is_required, kind_of, options_of
from schemas.models import HumanFunction

MAX_MODAL_FIELDS = 5
"""Discord's limit of top-level components in one modal; more fields are asked in steps."""

MAX_MODAL_TITLE = 45
MAX_LABEL_TEXT = 45
MAX_LABEL_DESCRIPTION = 100
MAX_INPUT_PLACEHOLDER = 100
"""Discord's limits of a modal title, a label, a label's description and a text input placeholder."""

MAX_TEXT_INPUT = 4000
"""Discord's limit of a text input's value."""

MAX_GROUP_OPTIONS = 10
"""Discord's limit of options in a radio group or checkbox group (a select holds 25)."""

MAX_REASON_CHARS = 1000
"""Longest decline reason the decline modal takes."""

PARAGRAPH_OVER = 120
"""A text field that may be longer than this many characters gets a multi-line input."""

FIELD_ID_PREFIX = "f:"
"""Custom id of a form input: ``f:<index of the property in the schema>``."""

REASON_ID = "reason"

_TEXT, _SELECT, _RADIO, _CHECKBOXES, _CHECKBOX, _ROW, _LABEL = 4, 3, 21, 22, 23, 1, 18
"""Discord component types a modal submit carries."""


def form_steps(schema: Mapping[str, Any]) -> list[list[str]]:
    """The properties of each step of the form, in schema order."""
    names = extra_fields(schema)
    return [names[i : i + MAX_MODAL_FIELDS] for i in range(0, len(names), MAX_MODAL_FIELDS)] or [[]]


def step_of(schema: Mapping[str, Any], name: str) -> int:
    """The step that asks for property ``name`` (0 for a form-wide problem)."""
    return next((i for i, step in enumerate(form_steps(schema)) if name in step), 0)


def form_modal(hf: HumanFunction, step: int, values: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """The modal of one step of the form, filled with ``values`` (earlier texts) or the defaults."""
    schema = hf.request_schema
    steps = form_steps(schema)
    step = min(max(step, 0), len(steps) - 1)
    title = schema.get("title") if isinstance(schema.get("title"), str) else None
    suffix = f" ({step + 1}/{len(steps)})" if len(steps) > 1 else ""
    modal = ui.Modal(
        title=clip((title or "Your answer").strip() or "Your answer", MAX_MODAL_TITLE - len(suffix)) + suffix,
        custom_id=str(CustomId(hf.id, Act.FORM, step)),
        timeout=None,
    )
    names = list(schema.get("properties") or {})
    for name in steps[step]:
        prop = schema["properties"][name]
        current = (values or {}).get(name)
        about = prop.get("description") if isinstance(prop.get("description"), str) else ""
        hint = field_hint(schema, name, with_required=False)
        modal.add_item(
            ui.Label(
                text=clip(field_label(name, prop), MAX_LABEL_TEXT),
                description=clip(f"{about} ({hint})" if about else hint, MAX_LABEL_DESCRIPTION),
                component=_input(schema, name, FIELD_ID_PREFIX + str(names.index(name)), current),
            )
        )
    return modal.to_dict()


def reason_modal(hf: HumanFunction) -> dict[str, Any]:
    """The modal of Decline: one optional reason."""
    modal = ui.Modal(title="Decline this request", custom_id=str(CustomId(hf.id, Act.REASON)), timeout=None)
    reason: ui.TextInput[ui.Modal] = ui.TextInput(
        custom_id=REASON_ID,
        style=discord.TextStyle.paragraph,
        required=False,
        max_length=MAX_REASON_CHARS,
        placeholder="Optional: tell the agent why",
    )
    modal.add_item(ui.Label(text="Reason", component=reason))
    return modal.to_dict()


def _input(
    schema: Mapping[str, Any], name: str, custom_id: str, current: list[str] | None
) -> ui.Item[ui.Modal]:
    prop: Mapping[str, Any] = schema["properties"][name]
    kind = kind_of(prop)
    required = is_required(schema, name)
    texts = current if current is not None else _default_texts(prop)
    if kind == "boolean":
        if not required:
            return ui.Checkbox(custom_id=custom_id, default=texts == ["true"])
        yes_no = [("Yes", "true"), ("No", "false")]
        options = [discord.RadioGroupOption(label=t, value=v, default=texts == [v]) for t, v in yes_no]
        return ui.RadioGroup(custom_id=custom_id, required=True, options=options)
    if kind in ("single_select", "multi_select"):
        return _choice(prop, custom_id, required, set(texts))
    long = kind == "string" and "format" not in prop and (prop.get("maxLength") or 10**6) > PARAGRAPH_OVER
    low = prop.get("minLength") if kind == "string" else None
    high = prop.get("maxLength") if kind == "string" else None
    example = FORMAT_EXAMPLES.get(str(prop.get("format")))
    placeholder = example or (field_hint(schema, name, with_required=False) if kind != "string" else None)
    return ui.TextInput(
        custom_id=custom_id,
        style=discord.TextStyle.paragraph if long else discord.TextStyle.short,
        required=required,
        min_length=min(int(low), MAX_TEXT_INPUT) if low else None,
        max_length=min(int(high), MAX_TEXT_INPUT) if high else MAX_TEXT_INPUT,
        default=clip(texts[0], MAX_TEXT_INPUT) if texts and texts[0] else None,
        placeholder=clip(placeholder, MAX_INPUT_PLACEHOLDER) if placeholder else None,
    )


def _choice(prop: Mapping[str, Any], custom_id: str, required: bool, chosen: set[str]) -> ui.Item[ui.Modal]:
    options = options_of(prop)
    labels = [(clip(o.title, MAX_OPTION_TEXT), str(i), o.value in chosen) for i, o in enumerate(options)]
    if kind_of(prop) == "single_select":
        if 2 <= len(options) <= MAX_GROUP_OPTIONS:
            radio = [discord.RadioGroupOption(label=t, value=v, default=d) for t, v, d in labels]
            return ui.RadioGroup(custom_id=custom_id, required=required, options=radio)
        low, high = (1 if required else 0), 1
    else:
        low = max(int(prop.get("minItems") or 0), 1 if required else 0)
        high = max(min(int(prop.get("maxItems") or len(options)), len(options)), low, 1)
        if len(options) <= MAX_GROUP_OPTIONS:
            boxes = [discord.CheckboxGroupOption(label=t, value=v, default=d) for t, v, d in labels]
            return ui.CheckboxGroup(
                custom_id=custom_id, required=low > 0, min_values=low, max_values=high, options=boxes
            )
    select = [discord.SelectOption(label=t, value=v, default=d) for t, v, d in labels]
    return ui.Select(custom_id=custom_id, required=low > 0, min_values=low, max_values=high, options=select)


def _default_texts(prop: Mapping[str, Any]) -> list[str]:
    if "default" not in prop:
        return []
    default = prop["default"]
    if isinstance(default, bool):
        return ["true" if default else "false"]
    if isinstance(default, list):
        return [str(value) for value in default]
    return [str(default)]


def submitted_values(hf: HumanFunction, data: Mapping[str, Any]) -> dict[str, list[str]]:
    """The texts of a form modal's submit, by property name (option indexes turned back into values).

    A radio group left empty is left out (so a required field "is required"); an unchecked checkbox
    is ``false``. Raises ``InvalidAnswerError`` for data Discord would not send (an unknown option).
    """
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    names = list(properties)
    values: dict[str, list[str]] = {}
    errors: dict[str, str] = {}
    for component in _inputs(data):
        custom_id = str(component.get("custom_id", ""))
        index = custom_id.removeprefix(FIELD_ID_PREFIX)
        if not custom_id.startswith(FIELD_ID_PREFIX) or not index.isdigit() or int(index) >= len(names):
            continue
        name = names[int(index)]
        prop = properties[name]
        ctype, kind = component.get("type"), kind_of(prop)
        if ctype == _TEXT:
            values[name] = [str(component.get("value") or "")]
        elif ctype == _CHECKBOX:
            values[name] = ["true" if component.get("value") is True else "false"]
        elif ctype == _RADIO and kind == "boolean":
            if component.get("value") in ("true", "false"):
                values[name] = [str(component["value"])]
        elif ctype in (_SELECT, _CHECKBOXES, _RADIO):
            raw = component.get("values") if ctype != _RADIO else [component.get("value")]
            chosen = [str(v) for v in (raw if isinstance(raw, list) else []) if v is not None]
            picked = option_values(options_of(prop), chosen)
            if picked is None:
                errors[name] = "must be one of: " + ", ".join(o.value for o in options_of(prop))
            elif chosen or ctype != _RADIO:
                values[name] = picked
    if errors:
        raise InvalidAnswerError(errors)
    return values


def option_values(options: list[Option], indexes: list[str]) -> list[str] | None:
    """The option values that indexes (as Discord sends them back) name; ``None`` if any is unknown."""
    if not all(index.isdigit() and int(index) < len(options) for index in indexes):
        return None
    return [options[int(index)].value for index in indexes]


def submitted_reason(data: Mapping[str, Any]) -> str | None:
    """The stripped reason of the decline modal, ``None`` when left empty."""
    for component in _inputs(data):
        if component.get("custom_id") == REASON_ID:
            text = str(component.get("value") or "").strip()
            if len(text) > MAX_REASON_CHARS:
                raise InvalidAnswerError({"reason": f"must be at most {MAX_REASON_CHARS} characters"})
            return text or None
    return None


def _inputs(data: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every input of a modal submit, inside labels (type 18) or legacy action rows (type 1)."""
    for component in data.get("components") or []:
        if not isinstance(component, Mapping):
            continue
        if component.get("type") == _LABEL and isinstance(component.get("component"), Mapping):
            yield component["component"]
        elif component.get("type") == _ROW:
            yield from (c for c in component.get("components") or [] if isinstance(c, Mapping))
        else:
            yield component
