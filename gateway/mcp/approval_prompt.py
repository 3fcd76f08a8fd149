"""``approval_prompt``: the permission prompt tool of Claude Code and the Claude Agent SDK
(``--permission-prompt-tool mcp__humangate__approval_prompt``; docs/permissions.md).

The client asks before each tool call it does not decide itself. The call is planned by
``gateway.permissions.prompt`` (the caller's policy rules, or a rule allowed for this MCP session,
decide at once; else a person is asked like any Human Function, with the same routing, approvers,
steps, reminders, approvals, audit and webhooks), and the result is one text of compact JSON
(``gateway.permissions.results``); the agent always gets its input back unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import mcp_types as types

from gateway.core.waiting import ResultSource
from gateway.mcp.arguments import Arguments, object_or_none
from gateway.mcp.call import Call, Question
from gateway.mcp.texts import text_result
from gateway.permissions.decisions import remember
from gateway.permissions.prompt import Prompt, chose_session, decision_of, plan
from gateway.permissions.results import permission_result
from schemas.errors import HumangateError
from schemas.models import Outcome
from schemas.results import compact_json

NAME = "approval_prompt"

MAX_INPUT_BYTES = 1024 * 1024
"""Largest ``input`` accepted, as compact UTF-8 JSON (the ``/mcp`` body limit is a little more)."""

MAX_TOOL_NAME = 256
"""Longest ``tool_name``."""

TOOL = types.Tool(
    name=NAME,
    description=(
        "Permission prompt for Claude Code and the Claude Agent SDK: a person (or the caller's policy "
        "rules) decides whether a tool call may run. Returns one JSON text: "
        '{"behavior":"allow","updatedInput":{...}} or {"behavior":"deny","message":"..."}.'
    ),
    input_schema={
        "type": "object",
        "properties": {
            "tool_name": {"type": "string", "description": "The tool the agent wants to call"},
            "input": {"type": "object", "description": "The tool call's input"},
            "tool_use_id": {"type": "string", "description": "The tool call's id"},
        },
        "required": ["tool_name", "input"],
    },
)

_REMEMBERING: set[asyncio.Task[None]] = set()
"""Session rules being written after a result (held so that they finish)."""


def read_call(raw: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The tool name and input of a call; errors name the argument and the rule. Fields a client adds
    beyond §19's (``tool_use_id`` and any newer one) are read past, never refused."""
    args = raw or {}
    arguments = Arguments()
    tool = arguments.text("tool_name", args.get("tool_name"), max_chars=MAX_TOOL_NAME)
    call_input = object_or_none(arguments, "input", args.get("input"))
    if "input" not in args:
        arguments.violations = [v for v in arguments.violations if v.path != "input"]
        arguments.add("input", "is required")
    if call_input is not None and len(compact_json(dict(call_input)).encode()) > MAX_INPUT_BYTES:
        arguments.add("input", f"must be at most {MAX_INPUT_BYTES} bytes as JSON")
    arguments.raise_any()
    assert tool is not None and call_input is not None
    return tool.strip(), dict(call_input)


async def prepare(call: Call, raw: dict[str, Any] | None) -> Question | types.CallToolResult:
    """The question of a call, or its result at once (invalid arguments, a rule's decision)."""
    try:
        tool, call_input = read_call(raw)
    except HumangateError as exc:
        return text_result(str(exc), error=True)
    session_id = _session_id(call)
    prompt = await plan(call.runtime, call.caller, tool, call_input, session_id=session_id)
    if prompt.decided is not None:
        return permission_result(prompt.decided)
    assert prompt.question is not None
    return replace(prompt.question, result_of=_result_of(call, prompt, session_id))


def _result_of(
    call: Call, prompt: Prompt, session_id: str | None
) -> Callable[[Outcome, ResultSource], types.CallToolResult]:
    def result_of(outcome: Outcome, hf: ResultSource) -> types.CallToolResult:
        if chose_session(outcome) and prompt.rule is not None:
            # Also kept for the MCP session, for clients that ignore updatedPermissions.
            task = asyncio.get_running_loop().create_task(
                remember(call.runtime.redis, session_id, *prompt.rule)
            )
            _REMEMBERING.add(task)
            task.add_done_callback(_REMEMBERING.discard)
        return permission_result(decision_of(prompt.tool, prompt.call_input, outcome, hf))

    return result_of


def _session_id(call: Call) -> str | None:
    """The 2025-11-25 MCP session of the call, if its connection has one (2026-07-28 has none)."""
    request = call.ctx.request
    session_id = request.headers.get("mcp-session-id") if request is not None else None
    return session_id or None
