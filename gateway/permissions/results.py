"""The result of ``approval_prompt`` as Claude Code and the Claude Agent SDK read it: exactly one text
content holding compact JSON (docs/permissions.md#results). It is never an error result: a denial is
a decision, which the client hands the model as the tool call's error itself."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from gateway.mcp.texts import text_result
from schemas.models import Action, Outcome, Status
from schemas.results import NO_REASON, compact_json

_WAITED = re.compile(r"(?:after|within) (\d+ (?:second|minute)s?)")
"""The wait in an expired request's reason (``Request timed out after 5 minutes``, ``No answer within
90 seconds (policy x)``)."""


def permission_result(decision: dict[str, Any]) -> types.CallToolResult:
    """One text content: ``decision`` as compact JSON."""
    return text_result(compact_json(decision), error=False)


def allow(updated_input: Mapping[str, Any]) -> dict[str, Any]:
    """``{"behavior":"allow","updatedInput":{...}}``."""
    return {"behavior": "allow", "updatedInput": dict(updated_input)}


def allow_for_session(
    updated_input: Mapping[str, Any], tool: str, rule_content: str | None
) -> dict[str, Any]:
    """Allow, and add the rule the person saw on the button to the client's session rules."""
    rule: dict[str, Any] = {"toolName": tool}
    if rule_content is not None:
        rule["ruleContent"] = rule_content
    update = {"type": "addRules", "rules": [rule], "behavior": "allow", "destination": "session"}
    return allow(updated_input) | {"updatedPermissions": [update]}


def deny(message: str) -> dict[str, Any]:
    """``{"behavior":"deny","message":"..."}``."""
    return {"behavior": "deny", "message": message}


def denial_of(outcome: Outcome) -> dict[str, Any]:
    """The denial of a request that did not end in an allowing answer: nobody answered in time
    (whatever the policy's ``on_timeout``), or a person denied it (with their reason)."""
    if outcome.status is Status.EXPIRED:
        waited = _WAITED.search(outcome.reason or "")
        return deny(f"No answer within {waited.group(1)}" if waited else "No answer in time")
    name = (outcome.person.name if outcome.person is not None else None) or outcome.by or "a person"
    reason = outcome.reason if outcome.reason and outcome.reason != NO_REASON else None
    if outcome.action is Action.ACCEPT:
        reason = None
    return deny(f"Denied by {name}: {reason}" if reason else f"Denied by {name}")
