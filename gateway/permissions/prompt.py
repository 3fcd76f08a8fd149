"""A permission prompt planned and decided, for the MCP tool ``approval_prompt`` and for REST callers
(docs/permissions.md): the caller's policy rules (or a rule a person allowed for this MCP session)
decide at once; otherwise a person is asked with the call shown readably and buttons Allow, Allow
for this session (when a rule can be derived) and a decline. ``decision_of`` turns how the request
ended into the JSON Claude Code reads; a timeout never allows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio

from gateway.core.audit import audit_settings
from gateway.core.callers import Caller
from gateway.core.policies import policy_of
from gateway.core.waiting import ResultSource
from gateway.mcp import ask_user_question
from gateway.mcp.call import Question
from gateway.permissions.decisions import Decided, by_policy, by_session, record_decision
from gateway.permissions.describe import describe_call
from gateway.permissions.results import allow, allow_for_session, denial_of, deny
from gateway.runtime import Runtime
from schemas.errors import HumangateError
from schemas.models import Action, Outcome
from schemas.results import compact_json
from schemas.tool_rules import session_rule

ASK_USER_QUESTION = "AskUserQuestion"

DECISION = "decision"
"""The one property of a call's schema: which allowing button the person chose."""
ALLOW = "allow"
SESSION = "session"

LARGE_INPUT_BYTES = 64 * 1024
"""An input larger than this is described off the event loop (diffing and masking take tens of ms)."""

SESSION_BUTTON_CHARS = 60
"""Longest "Allow for this session: <rule>" button; past it the button says only that."""

SessionRule = tuple[str, str | None]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A call planned: its decision at once, or the question a person answers."""

    tool: str
    call_input: dict[str, Any]
    decided: dict[str, Any] | None = None
    decided_id: str | None = None
    """The audit id of a decision made at once."""
    decided_by: str | None = None
    """The policy whose rule made it (``None``: a rule allowed for the session)."""
    question: Question | None = None
    rule: SessionRule | None = field(default=None)
    """What "Allow for this session" adds for this call (``None``: no such button)."""


async def plan(
    runtime: Runtime,
    caller: Caller,
    tool: str,
    call_input: dict[str, Any],
    *,
    session_id: str | None = None,
    policy: str | None = None,
) -> Prompt:
    """Decide ``caller``'s call of ``tool`` by the rules, or plan the question a person answers.
    ``policy`` names the caller's policy (REST), else its first matching one applies."""
    if tool == ASK_USER_QUESTION:
        return Prompt(tool, call_input, **_questions(call_input, runtime))
    applied = policy_of(runtime.service.policies, caller, policy)
    decided, asked = by_policy(applied, tool, call_input)
    if decided is None and not asked:
        decided = await by_session(runtime.redis, session_id, tool, call_input)
    if decided is not None:
        at = runtime.service.clock()
        kept = audit_settings(runtime.settings)
        event_id = await record_decision(runtime.redis, kept, caller.identity, tool, decided, at)
        return Prompt(
            tool,
            call_input,
            decided=_decided(decided, call_input),
            decided_id=event_id,
            decided_by=decided.policy,
        )
    rule = session_rule(tool, call_input)
    describe = partial(describe_call, caller.name, tool, call_input, runtime.settings.max_message_bytes)
    serialized = compact_json(call_input)  # once, for both: an input may be a mebibyte
    message = await anyio.to_thread.run_sync(describe) if len(serialized) > LARGE_INPUT_BYTES else describe()
    call_id = hashlib.sha256(f"{tool}\n{serialized}".encode()).hexdigest()[:12]
    schema = decision_schema(None if rule is None else session_title(rule), call_id)
    return Prompt(tool, call_input, question=Question(None, message, schema), rule=rule)


def decision_schema(session_title: str | None, call_id: str) -> dict[str, Any]:
    """What a person answers about a call: Allow, or Allow for this session (``session_title``, the
    button naming the rule), as one choice: a button each on every chat surface, beside Decline, which
    denies. Without a session rule, Allow alone.
    ``call_id`` (a digest of the whole call) tells two calls apart whose shown parts are the same,
    so that neither re-attaches to the other's request."""
    base: dict[str, Any] = {
        "type": "object",
        "title": "Permission requested",
        "description": f"Call {call_id}",
    }
    choices = [{"const": ALLOW, "title": "Allow"}]
    if session_title is not None:
        choices.append({"const": SESSION, "title": session_title})
    return base | {
        "properties": {DECISION: {"type": "string", "title": "Decision", "oneOf": choices}},
        "required": [DECISION],
    }


def session_title(rule: SessionRule) -> str:
    """The button that allows for the session, naming the rule it adds (clipped for chat buttons)."""
    tool, content = rule
    label = f"Allow for this session: {tool if content is None else f'{tool}({content})'}"
    return label if len(label) <= SESSION_BUTTON_CHARS else "Allow for this session"


def decision_of(
    tool: str, call_input: Mapping[str, Any], outcome: Outcome, hf: ResultSource
) -> dict[str, Any]:
    """The JSON Claude Code reads for how a person's request about the call ended."""
    content = outcome.content or {}
    if outcome.action is not Action.ACCEPT:
        return denial_of(outcome)
    if tool == ASK_USER_QUESTION:
        answers = ask_user_question.answers_of(hf, content)
        return allow({"questions": call_input.get("questions"), "answers": answers})
    rule = session_rule(tool, call_input)
    if content.get(DECISION) == SESSION and rule is not None:
        return allow_for_session(call_input, rule[0], rule[1])
    if content.get(DECISION) == ALLOW:
        return allow(call_input)
    return denial_of(outcome)


def chose_session(outcome: Outcome) -> bool:
    """Whether the person chose "Allow for this session"."""
    return outcome.action is Action.ACCEPT and (outcome.content or {}).get(DECISION) == SESSION


def _decided(decided: Decided, call_input: Mapping[str, Any]) -> dict[str, Any]:
    if decided.behavior == "allow":
        return allow(call_input)
    return deny(f"Denied by policy '{decided.policy}': {decided.rule}")


def _questions(call_input: Mapping[str, Any], runtime: Runtime) -> dict[str, Any]:
    """AskUserQuestion's questions as ``ask_user_question``'s form (its answers come back in
    ``updatedInput``); questions that cannot be shown are denied, saying why. Fields Claude Code adds
    to an option (``preview``) are shown nowhere and kept in what the agent gets back."""
    try:
        question = ask_user_question.parse_arguments(
            {"questions": _without_previews(call_input.get("questions"))}, runtime.settings
        )
    except HumangateError as exc:
        return {"decided": deny(f"The questions could not be shown to a person: {exc}")}
    return {"question": question}


def _without_previews(raw: object) -> object:
    if not isinstance(raw, list):
        return raw
    questions: list[object] = []
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
