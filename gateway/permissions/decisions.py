"""Tool calls decided without a person (docs/permissions.md#rules): by the caller's policy rules, or
by a rule a person allowed for this MCP session; each recorded in the audit with the rule.

A decided call has no Human Function; its trail is one ``decided`` event under an id of its own, so
``humangate audit`` shows it beside the requests (docs/audit.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.audit import AuditSettings, record
from gateway.core.redis_client import store_operation, text
from gateway.core.service import new_id
from gateway.mcp.session_registry import SESSION_TTL
from schemas.errors import StoreUnavailableError, ToolRuleError
from schemas.policies import Policy
from schemas.tool_rules import ToolRules

logger = logging.getLogger(__name__)

SESSION_RULES_MAX = 200
"""Most rules one MCP session remembers (a client allowing call after call for the session)."""


@dataclass(frozen=True, slots=True)
class Decided:
    """A call's decision without a person: ``allow`` or ``deny``, by which rule, from where."""

    behavior: str
    rule: str
    """The deciding rule as written (``Bash(npm test *)``; several for a compound command)."""
    policy: str | None
    """The policy whose rule decided; ``None`` for a rule allowed for the session."""


def by_policy(policy: Policy | None, tool: str, call_input: Mapping[str, Any]) -> tuple[Decided | None, bool]:
    """The policy's rules' decision on the call (``None`` when a person decides), and whether an
    ``ask`` rule matched (then no rule allowed for the session decides either: ask beats allow)."""
    if policy is None or not policy.tools.rules:
        return None, False
    decision = policy.tools.rules.decide(tool, call_input)
    if decision is None:
        return None, False
    if decision.behaviour == "ask":
        return None, True
    return Decided(decision.behaviour, ", ".join(rule.text for rule in decision.rules), policy.name), False


async def by_session(
    redis: Redis, session_id: str | None, tool: str, call_input: Mapping[str, Any]
) -> Decided | None:
    """An allow by a rule a person allowed earlier on this MCP session; ``None`` otherwise (also
    when Redis cannot be reached: the person is asked)."""
    if not session_id:
        return None
    try:
        remembered = await _session_rules(redis, session_id)
    except StoreUnavailableError as exc:
        logger.warning("session rules not read: %s", exc)
        return None
    if not remembered:
        return None
    try:
        rules = ToolRules.parse(allow=sorted(remembered))
    except ToolRuleError:
        return None
    decision = rules.decide(tool, call_input)
    if decision is None or decision.behaviour != "allow":
        return None
    return Decided("allow", ", ".join(rule.text for rule in decision.rules), None)


async def remember(redis: Redis, session_id: str | None, tool: str, content: str | None) -> None:
    """Keep "Allow for this session" for this MCP session, for clients that ignore
    ``updatedPermissions`` (best effort: without Redis the client's own session rule still holds)."""
    if not session_id:
        return
    rule = (
        tool
        if content is None
        else f"{tool}({content.replace('(', chr(92) + '(').replace(')', chr(92) + ')')})"
    )
    try:
        await _add_session_rule(redis, session_id, rule)
    except StoreUnavailableError as exc:
        logger.warning("session rule not kept: %s", exc)


def _escaped(content: str) -> str:
    """A rule's content with its parentheses escaped (``schemas.tool_rule``'s syntax)."""
    return content.replace("(", "\\(").replace(")", "\\)")


async def record_decision(
    redis: Redis, kept: AuditSettings, caller: str, tool: str, decided: Decided, at: float
) -> str:
    """The ``decided`` event of a call no person saw, under a new id (returned)."""
    event_id = new_id()
    await record(
        redis,
        kept,
        event_id,
        "decided",
        at,
        caller=caller,
        policy=decided.policy,
        tool=tool,
        behavior=decided.behavior,
        rule=decided.rule if decided.policy else f"session: {decided.rule}",
    )
    return event_id


@store_operation
async def _session_rules(redis: Redis, session_id: str) -> set[str]:
    members = await redis.smembers(keys.session_tool_rules(session_id))  # type: ignore[misc, unused-ignore]
    return {text(member) for member in members}


@store_operation
async def _add_session_rule(redis: Redis, session_id: str, rule: str) -> None:
    key = keys.session_tool_rules(session_id)
    async with redis.pipeline(transaction=True) as pipe:
        pipe.sadd(key, rule)
        pipe.expire(key, SESSION_TTL)
        pipe.scard(key)
        _, _, count = await pipe.execute()
    if int(count) > SESSION_RULES_MAX:
        await redis.spop(key)  # type: ignore[misc, unused-ignore]
