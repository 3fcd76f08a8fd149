"""The ``elicit`` tool, exactly as docs/tools.md#elicit fixes it."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from channels.registry import default_channel
from gateway.mcp.app import FORM_URI
from gateway.mcp.asking import Question
from gateway.service import check_request
from schemas.errors import InvalidRequestError
from schemas.settings import CHANNEL_NAMES, Settings

NAME = "elicit"

TOOL = types.Tool(
    name=NAME,
    description="Request structured input from user via Human Functions",
    input_schema={
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "Message explaining what information is needed"},
            "schema": {"type": "object", "description": "JSON Schema for requested data (flat object only)"},
            "uiType": {
                "type": "string",
                "enum": list(CHANNEL_NAMES),
                "description": "UI platform to use (default: slack)",
            },
        },
        "required": ["message", "schema"],
    },
    execution=types.ToolExecution(task_support="optional"),
    _meta={"ui": {"resourceUri": FORM_URI}},
)
"""The tool as docs/tools.md#elicit fixes it (no outputSchema: results carry structuredContent freely),
plus its two additive fields: its inline form app, and that a call may run as a task."""


def channel_argument(args: dict[str, Any], settings: Settings) -> str:
    """The ``uiType`` argument, or the default channel when it is left out."""
    channel = args.get("uiType")
    if channel is None:
        return default_channel(settings)
    if channel not in CHANNEL_NAMES:
        raise InvalidRequestError(f"Invalid arguments: uiType: must be one of {', '.join(CHANNEL_NAMES)}")
    return str(channel)


def parse_arguments(raw: dict[str, Any] | None, settings: Settings) -> tuple[str, dict[str, Any], str]:
    """(message, schema, channel) of a call; errors name the argument and the rule."""
    args = raw or {}
    unknown = sorted(set(args) - {"message", "schema", "uiType"})
    if unknown:
        raise InvalidRequestError(f"Invalid arguments: unknown argument(s): {', '.join(unknown)}")
    channel = channel_argument(args, settings)
    if "message" not in args:
        raise InvalidRequestError("Invalid arguments: message: is required")
    if "schema" not in args:
        raise InvalidRequestError("Invalid arguments: schema: is required")
    message, schema = check_request(args["message"], args["schema"], settings)
    return message, schema, channel


def question_of(raw: dict[str, Any] | None, settings: Settings) -> Question:
    """The question a call asks (``parse_arguments``'s errors)."""
    message, schema, channel = parse_arguments(raw, settings)
    return Question(channel, message, schema)
