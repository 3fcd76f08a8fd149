"""``request_user_input``: text, multi-line text, a choice or a confirmation
(docs/tools.md#request_user_input).

Answered as ``elicit`` with a one-property schema, ``response`` (required):

| ``type`` | ``response`` | what people see |
| --- | --- | --- |
| ``text`` | string, at most ``TEXT_MAX_LENGTH`` characters | a one-line box |
| ``multiline`` | string without a length limit | a multi-line box |
| ``choice`` | string with ``enum`` = ``options`` | one button / radio / select entry per option |
| ``confirm`` | boolean | Approve and Decline (chat), a checkbox (web) |

``defaultValue`` pre-fills the answer (``confirm``: true/false, yes/no); ``timeout`` (seconds) may
shorten the caller's timeout, never lengthen it. The result is ``elicit``'s:
``User provided: {"response":...}``.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from channels.display import MULTILINE_FROM
from gateway.mcp.arguments import UI_TYPE_PROPERTY, Arguments, channel_argument
from gateway.mcp.call import Question
from schemas.settings import Settings

NAME = "request_user_input"

TYPES = ("text", "multiline", "choice", "confirm")
"""The kinds of input a call may ask for."""

RESPONSE = "response"
"""The one property of the schema."""

TEXT_MAX_LENGTH = MULTILINE_FROM
"""Longest ``text`` answer: the most a one-line box holds on every channel (``channels.display``)."""

_BOOLEAN_WORDS = {"true": True, "yes": True, "false": False, "no": False}

TOOL = types.Tool(
    name=NAME,
    description=(
        "Ask the user for input via Human Functions and wait for it: free text ('text', one line; "
        "'multiline'), one of several options ('choice', with 'options'), or a yes/no confirmation "
        "('confirm'). Returns the answer as {\"response\": ...}."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "The question to ask the user"},
            "type": {"type": "string", "enum": list(TYPES), "description": "Type of input"},
            "options": {
                "type": "array",
                "items": {"type": "string"},
                "description": "For type 'choice': the options to choose from",
            },
            "defaultValue": {"type": "string", "description": "A value to pre-fill"},
            "timeout": {
                "type": "number",
                "description": "Seconds to wait, if shorter than the caller's timeout",
            },
            "uiType": UI_TYPE_PROPERTY,
        },
        "required": ["message", "type"],
    },
)


def response_schema(kind: str, options: list[str], default: Any) -> dict[str, Any]:
    """The flat schema of one call: the ``response`` property of its ``type``."""
    prop: dict[str, Any]
    if kind == "confirm":
        prop = {"type": "boolean", "title": "Confirm"}
    else:
        prop = {"type": "string", "title": "Your answer"}
        if kind == "text":
            prop["maxLength"] = TEXT_MAX_LENGTH
        elif kind == "choice":
            prop["enum"] = list(options)
    if default is not None:
        prop["default"] = default
    return {"type": "object", "properties": {RESPONSE: prop}, "required": [RESPONSE]}


def _options(raw: object, kind: str | None, arguments: Arguments, settings: Settings) -> list[str]:
    if kind != "choice":
        if raw not in (None, []):
            arguments.add("options", 'is only used with type "choice"')
        return []
    items = arguments.items("options", raw, 1, settings.max_options, "options")
    options: list[str] = []
    for i, item in enumerate(items or []):
        option = arguments.text(f"options[{i}]", item)
        if option is not None and option in options:
            arguments.add(f"options[{i}]", "must differ from the other options")
        elif option is not None:
            options.append(option)
    return options


def _default(raw: object, kind: str | None, options: list[str], arguments: Arguments) -> Any:
    if raw is None or kind is None:
        return None
    if kind == "confirm":
        word = raw.strip().lower() if isinstance(raw, str) else raw
        if isinstance(word, bool):
            return word
        if word in _BOOLEAN_WORDS:
            return _BOOLEAN_WORDS[str(word)]
        arguments.add("defaultValue", 'must be "true" or "false" for type "confirm"')
        return None
    limit = TEXT_MAX_LENGTH if kind == "text" else None
    default = arguments.text("defaultValue", raw, required=False, max_chars=limit)
    if default is not None and kind == "choice" and options and default not in options:
        arguments.add("defaultValue", "must be one of the options")
        return None
    return default or None


def parse_arguments(raw: dict[str, Any] | None, settings: Settings) -> Question:
    """The question a call asks; errors name the argument and the rule."""
    args = raw or {}
    arguments = Arguments()
    arguments.unknown("", args, ("message", "type", "options", "defaultValue", "timeout", "uiType"))
    message = arguments.text("message", args.get("message"), max_bytes=settings.max_message_bytes)
    kind = args.get("type")
    if kind is None:
        arguments.add("type", "is required")
    elif kind not in TYPES:
        arguments.add("type", f"must be one of {', '.join(TYPES)}")
        kind = None
    options = _options(args.get("options"), kind, arguments, settings)
    default = _default(args.get("defaultValue"), kind, options, arguments)
    timeout = arguments.seconds("timeout", args.get("timeout"))
    arguments.raise_any()
    assert message is not None and isinstance(kind, str)
    channel = channel_argument(args, settings)
    return Question(channel, message, response_schema(kind, options, default), timeout=timeout)
