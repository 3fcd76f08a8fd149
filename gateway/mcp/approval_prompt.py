"""``approval_prompt``: the permission prompt tool of Claude Code and the Claude Agent SDK
(``--permission-prompt-tool mcp__humangate__approval_prompt``; docs/permissions.md).

The client asks before each tool call it does not decide itself. The caller's policy rules
(``[policies.NAME.tools]``) decide at once where one matches; otherwise a person is asked like any
Human Function (same routing, approvers, steps, reminders, approvals, audit and webhooks) with the
call shown readably (``gateway.permissions.describe``): **Allow**, **Allow for this session** (when
a rule can be derived) or a decline, which denies. The result is one text of compact JSON
(``gateway.permissions.results``); the agent always gets its input back unchanged. A timeout never
allows.

``tool_name`` ``AskUserQuestion`` is answered as ``ask_user_question``'s form: the person's answers
come back in ``updatedInput``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import Any

import anyio
import mcp_types as types

from gateway.core.audit import audit_settings
from gateway.core.waiting import ResultSource
from gateway.mcp import ask_user_question
from gateway.mcp.arguments import Arguments, object_or_none
from gateway.mcp.call import Call, Question
from gateway.mcp.texts import text_result
from gateway.permissions.decisions import Decided, by_policy, by_session, record_decision, remember
from gateway.permissions.describe import describe_call
from gateway.permissions.results import allow, allow_for_session, denial_of, deny, permission_result
from schemas.errors import HumangateError
from schemas.models import Action, Outcome
from schemas.tool_rules import session_rule

NAME = "approval_prompt"

MAX_INPUT_BYTES = 1024 * 1024
"""Largest ``input`` accepted, as compact UTF-8 JSON (the ``/mcp`` body limit is this too)."""

LARGE_INPUT_BYTES = 64 * 1024
"""An input larger than this is described off the event loop."""

MAX_TOOL_NAME = 256
"""Longest ``tool_name``."""

DECISION = "decision"
"""The one property of a call's schema: which allowing button the person chose."""
ALLOW = "allow"
SESSION = "session"
APPROVE = "allow"
"""The one boolean of a call's schema when no session rule can be derived."""

ASK_USER_QUESTION = "AskUserQuestion"

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


def decision_schema(session_title: str | None) -> dict[str, Any]:
    """What a person answers about a call: Allow, or Allow for this session (``session_title``, the
    button naming the rule), as one choice; a decline denies. Without a session rule, one Allow."""
    if session_title is None:
        return {
            "type": "object",
            "title": "Permission requested",
            "properties": {APPROVE: {"type": "boolean", "title": "Allow"}},
            "required": [APPROVE],
        }
    return {
        "type": "object",
        "title": "Permission requested",
        "properties": {
            DECISION: {
                "type": "string",
                "title": "Decision",
                "oneOf": [{"const": ALLOW, "title": "Allow"}, {"const": SESSION, "title": session_title}],
            }
        },
        "required": [DECISION],
    }


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
    if call_input is not None and len(_compact(call_input).encode()) > MAX_INPUT_BYTES:
        arguments.add("input", f"must be at most {MAX_INPUT_BYTES} bytes as JSON")
    arguments.raise_any()
    assert tool is not None and call_input is not None
    return tool.strip(), dict(call_input)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def prepare(call: Call, raw: dict[str, Any] | None) -> Question | types.CallToolResult:
    """The question of a call, or its result at once (invalid arguments, a policy rule's decision)."""
    settings = call.runtime.settings
    try:
        tool, call_input = read_call(raw)
    except HumangateError as exc:
        return text_result(str(exc), error=True)
    if tool == ASK_USER_QUESTION:
        return _questions(call_input, settings.max_message_bytes, settings)
    runtime = call.runtime
    policy = runtime.service.policies.first_for(call.caller.name, call.caller.authenticated)
    session_id = _session_id(call)
    decided, asked = by_policy(policy, tool, call_input)
    if decided is None and not asked:
        decided = await by_session(runtime.redis, session_id, tool, call_input)
    if decided is not None:
        kept = audit_settings(settings)
        await record_decision(
            runtime.redis, kept, call.caller.identity, tool, decided, runtime.service.clock()
        )
        return permission_result(_decided(decided, call_input))
    rule = session_rule(tool, call_input)
    title = None if rule is None else session_title(rule)
    describe = partial(describe_call, call.caller.name, tool, call_input, settings.max_message_bytes)
    # A large input (up to 1 MiB) is read in a thread: diffing and masking it takes tens of ms.
    large = len(_compact(call_input)) > LARGE_INPUT_BYTES
    message = await anyio.to_thread.run_sync(describe) if large else describe()
    remembering = partial(remember, runtime.redis, session_id)
    return Question(
        None, message, decision_schema(title), result_of=_result_of(call_input, rule, remembering)
    )


def _decided(decided: Decided, call_input: Mapping[str, Any]) -> dict[str, Any]:
    if decided.behavior == "allow":
        return allow(call_input)
    return deny(f"Denied by policy '{decided.policy}': {decided.rule}")


def _session_id(call: Call) -> str | None:
    """The 2025-11-25 MCP session of the call, if its connection has one (2026-07-28 has none)."""
    request = call.ctx.request
    session_id = request.headers.get("mcp-session-id") if request is not None else None
    return session_id or None


_REMEMBERING: set[asyncio.Task[None]] = set()
"""Session rules being written after a result (held so that they finish)."""


def session_title(rule: tuple[str, str | None]) -> str:
    """The button that allows for the session, naming the rule it adds (clipped for chat buttons)."""
    tool, content = rule
    shown = tool if content is None else f"{tool}({content})"
    label = f"Allow for this session: {shown}"
    return label if len(label) <= 60 else "Allow for this session"


def _result_of(
    call_input: Mapping[str, Any],
    rule: tuple[str, str | None] | None,
    remembering: Callable[[str, str | None], Coroutine[Any, Any, None]],
) -> Callable[[Outcome, ResultSource], types.CallToolResult]:
    def result_of(outcome: Outcome, hf: ResultSource) -> types.CallToolResult:
        content = outcome.content or {}
        if outcome.action is Action.ACCEPT and content.get(DECISION) == SESSION and rule is not None:
            task = asyncio.get_running_loop().create_task(remembering(*rule))
            _REMEMBERING.add(task)
            task.add_done_callback(_REMEMBERING.discard)
            return permission_result(allow_for_session(call_input, rule[0], rule[1]))
        if outcome.action is Action.ACCEPT and (
            content.get(DECISION) == ALLOW or content.get(APPROVE) is True
        ):
            return permission_result(allow(call_input))
        return permission_result(denial_of(outcome))

    return result_of


def _questions(
    call_input: Mapping[str, Any], max_bytes: int, settings: Any
) -> Question | types.CallToolResult:
    """AskUserQuestion's questions as ``ask_user_question``'s form; the answers come back in
    ``updatedInput``. Fields Claude Code adds to an option (``preview``) are shown nowhere and kept in
    what the agent gets back."""
    raw_questions = call_input.get("questions")
    cleaned = _without_previews(raw_questions)
    try:
        question = ask_user_question.parse_arguments({"questions": cleaned}, settings)
    except HumangateError as exc:
        return permission_result(deny(f"The questions could not be shown to a person: {exc}"))

    def result_of(outcome: Outcome, hf: ResultSource) -> types.CallToolResult:
        if outcome.action is not Action.ACCEPT:
            return permission_result(denial_of(outcome))
        answers = ask_user_question.answers_of(hf, outcome.content or {})
        return permission_result(allow({"questions": raw_questions, "answers": answers}))

    return Question(
        question.channel,
        question.message,
        question.schema,
        other_fields=question.other_fields,
        result_of=result_of,
    )


def _without_previews(raw: object) -> object:
    if not isinstance(raw, list):
        return raw
    questions = []
    for item in raw:
        if isinstance(item, Mapping) and isinstance(item.get("options"), list):
            options = [
                {k: v for k, v in option.items() if k in ("label", "description")}
                if isinstance(option, Mapping)
                else option
                for option in item["options"]
            ]
            item = {k: v for k, v in item.items() if k in ("question", "header", "multiSelect")} | {
                "options": options
            }
        questions.append(item)
    return questions
