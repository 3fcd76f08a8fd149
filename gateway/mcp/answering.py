"""``answer_request``: the app-only tool the inline form answers through (docs/tools.md#answer_request).

The app knows the arguments of the call it sits beside (``message``, ``schema``, ``uiType``), not the
Human Function's id. Those arguments and the calling caller are exactly what makes a call identical
for re-attaching (``gateway.core.service.fingerprint``), so they find the caller's own pending request and
nobody else's: another caller's arguments make another fingerprint, and ``owns`` checks the request
found. The answer goes through ``HumanFunctionService.answer`` like every other, ``via="client"``.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from gateway.core.callers import owns
from gateway.core.store import closed_error
from gateway.mcp.app import FORM_URI
from gateway.mcp.call import Call
from gateway.mcp.client_form import answer_from_client
from gateway.mcp.elicit import parse_arguments
from gateway.mcp.texts import text_result
from schemas.errors import (
    HumangateError,
    InvalidAnswerError,
    InvalidRequestError,
    UnknownRequestError,
)
from schemas.models import Action

NAME = "answer_request"

QUESTION_ARGUMENTS = ("message", "schema", "uiType")
"""The arguments of the asking call, which find its request."""

TOOL = types.Tool(
    name=NAME,
    description=(
        "Answer the caller's own pending humangate request from its inline form (called by the "
        "form app, not by the model)"
    ),
    input_schema={
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "The message of the call being answered"},
            "schema": {"type": "object", "description": "The schema of the call being answered"},
            "uiType": {"type": "string", "description": "The uiType of the call being answered, if any"},
            "action": {"type": "string", "enum": [action.value for action in Action]},
            "content": {"type": "object", "description": "The answer, one value per field (accept)"},
            "reason": {"type": "string", "description": "Why the person declined or canceled"},
        },
        "required": ["message", "schema", "action"],
    },
    _meta={"ui": {"resourceUri": FORM_URI, "visibility": ["app"]}},
)
"""Visible to the app only (``_meta.ui.visibility``): hosts never offer it to the model."""

NOT_FOUND_TEXT = "No pending request of this caller matches this form (it may have ended or expired)"
"""What the app is told when the arguments find none of the caller's requests."""


def _answer_parts(args: dict[str, Any]) -> tuple[Action, dict[str, Any] | None, str | None]:
    unknown = sorted(set(args) - {*QUESTION_ARGUMENTS, "action", "content", "reason"})
    if unknown:
        raise InvalidRequestError(f"Invalid arguments: unknown argument(s): {', '.join(unknown)}")
    try:
        action = Action(str(args.get("action")))
    except ValueError:
        raise InvalidRequestError("Invalid arguments: action: must be accept, decline or cancel") from None
    content = args.get("content")
    if content is not None and not isinstance(content, dict):
        raise InvalidRequestError("Invalid arguments: content: must be an object")
    reason = args.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise InvalidRequestError("Invalid arguments: reason: must be a string")
    return action, content, (reason or "").strip() or None


async def answer_request(call: Call, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Answer the calling caller's own pending request that the given call arguments asked."""
    args = arguments or {}
    runtime = call.runtime
    try:
        action, content, reason = _answer_parts(args)
        question = {key: args[key] for key in QUESTION_ARGUMENTS if key in args}
        message, schema, channel = parse_arguments(question, runtime.settings)
        hf_id = await runtime.store.attached(
            runtime.service.attach_key(call.caller, channel, message, schema)
        )
        if hf_id is None:
            return text_result(NOT_FOUND_TEXT, error=True)
        hf = await runtime.store.get(hf_id)
        if not owns(call.caller, hf):
            return text_result(NOT_FOUND_TEXT, error=True)
        if not hf.is_pending:
            assert hf.outcome is not None
            raise closed_error(hf.outcome)
        ended = await answer_from_client(runtime, call.caller, hf, action, content, reason)
    except InvalidAnswerError as exc:
        return text_result(str(exc), error=True, structured={"errors": exc.errors})
    except UnknownRequestError:
        return text_result(NOT_FOUND_TEXT, error=True)
    except HumangateError as exc:
        return text_result(str(exc), error=True)
    return text_result(
        f"Answer recorded ({ended.status.value})",
        error=False,
        structured={"status": ended.status.value, "id": ended.id},
    )
