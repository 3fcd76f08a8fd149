"""The ``elicit`` tool, exactly as docs/tools.md#elicit fixes it."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from gateway.core.service import check_request
from gateway.mcp.app import FORM_URI
from gateway.mcp.arguments import UI_TYPE_PROPERTY, channel_argument
from gateway.mcp.call import Question
from schemas.errors import InvalidRequestError
from schemas.settings import Settings

NAME = "elicit"

TOOL = types.Tool(
    name=NAME,
    description="Request structured input from user via Human Functions",
    input_schema={
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "Message explaining what information is needed"},
            "schema": {"type": "object", "description": "JSON Schema for requested data (flat object only)"},
            "uiType": UI_TYPE_PROPERTY,
        },
        "required": ["message", "schema"],
    },
    execution=types.ToolExecution(task_support="optional"),
    _meta={"ui": {"resourceUri": FORM_URI}},
)
"""The tool as docs/tools.md#elicit fixes it (no outputSchema: results carry structuredContent freely),
plus its two additive fields: its inline form app, and that a call may run as a task."""


def parse_arguments(raw: dict[str, Any] | None, settings: Settings) -> tuple[str, dict[str, Any], str | None]:
    """(message, schema, channel) of a call (channel ``None`` without ``uiType``); errors name the
    argument and the rule."""
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
