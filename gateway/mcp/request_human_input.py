"""``request_human_input``: one free-text question, ended soon unless a person starts answering
(docs/tools.md#request_human_input).

The prompt is the message and the schema one required text, ``reply`` (no length limit, so every
channel offers a multi-line box). The request is opened with ``HUMANGATE_IDLE_TIMEOUT``: nobody
starting to answer within it cancels the request (``User canceled: Request timed out after 1
minute``); a person opening the web form, the inbox form or a Slack or Discord modal, or refreshing
the Teams card, gives it the caller's full timeout at once (``HumanFunctionService.started``), and
the agent's progress says so. An accepted reply comes back verbatim: ``User provided: <reply>``.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from gateway.core.waiting import ResultSource
from gateway.mcp.arguments import UI_TYPE_PROPERTY, Arguments, channel_argument
from gateway.mcp.call import Question
from gateway.mcp.texts import outcome_result, text_result
from schemas.models import Action, Outcome
from schemas.results import structured_result
from schemas.settings import Settings

NAME = "request_human_input"

REPLY = "reply"
"""The one property of the schema."""


def reply_schema() -> dict[str, Any]:
    """What every ``request_human_input`` asks (a fresh copy: schemas travel into requests)."""
    return {
        "type": "object",
        "properties": {REPLY: {"type": "string", "title": "Your reply"}},
        "required": [REPLY],
    }


TOOL = types.Tool(
    name=NAME,
    description=(
        "Ask the human for input or guidance and wait for their reply. Explain the context in the "
        "conversation first; the prompt frames the question. If nobody starts answering within a short "
        "idle time (60 seconds by default) the request is canceled; once someone starts, it waits the "
        "full time."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The question to ask the human"},
            "uiType": UI_TYPE_PROPERTY,
        },
        "required": ["prompt"],
    },
)


def parse_arguments(raw: dict[str, Any] | None, settings: Settings) -> Question:
    """The question a call asks; errors name the argument and the rule."""
    args = raw or {}
    arguments = Arguments()
    arguments.unknown("", args, ("prompt", "uiType"))
    prompt = arguments.text("prompt", args.get("prompt"), max_bytes=settings.max_message_bytes)
    arguments.raise_any()
    assert prompt is not None
    channel = channel_argument(args, settings)
    return Question(channel, prompt, reply_schema(), idle_timeout=settings.idle_timeout)


def result_of(outcome: Outcome, hf: ResultSource) -> types.CallToolResult:
    """``User provided: <reply verbatim>``; decline, cancel and timeout as ``elicit``'s."""
    if outcome.action is not Action.ACCEPT:
        return outcome_result(outcome, hf)
    reply = str((outcome.content or {}).get(REPLY, ""))
    return text_result(f"User provided: {reply}", error=False, structured=structured_result(outcome, hf.id))
