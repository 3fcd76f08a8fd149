"""Tool permission rules (docs/policies.md#tool-rules): the decision of a policy's
``allow`` / ``ask`` / ``deny`` lists on one tool call, with the rule that made it, so that a call the
rules decide needs no person; and the rule "Allow for this session" adds.

Precedence is deny, then ask, then allow; no match is ``None`` (ask a person). A Bash command is
split into the commands it runs (``schemas.shell_words``): it is allowed only when every one is,
each by some allow rule, and denied or asked when any one (or its whole text) matches such a rule.
Whatever cannot be told for sure (a command that cannot be split, a relative path against an
anchored pattern, a missing field) never allows by a pattern: a deny or ask rule that may match
leaves the call to a person. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from schemas.errors import ToolRuleError
from schemas.path_globs import normal_path
from schemas.tool_rule import FILE_FIELDS, ToolCall, ToolRule, host_of, parse_rule

__all__ = ["Behaviour", "Decision", "ToolRule", "ToolRules", "parse_rule", "session_rule"]

Behaviour = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What the rules decided, and the rules that did: one, or for a compound command allowed,
    the rule that allowed each of its commands. ``behaviour`` is also the list they are in."""

    behaviour: Behaviour
    rules: tuple[ToolRule, ...]

    @property
    def rule(self) -> ToolRule:
        """The (first) deciding rule."""
        return self.rules[0]

    def describe(self) -> str:
        """``deny: Bash(rm -rf *)``, for the audit and the message to the agent."""
        return f"{self.behaviour}: " + ", ".join(rule.text for rule in self.rules)


@dataclass(frozen=True, slots=True)
class ToolRules:
    """A policy's three lists, each rule parsed."""

    allow: tuple[ToolRule, ...] = ()
    ask: tuple[ToolRule, ...] = ()
    deny: tuple[ToolRule, ...] = ()

    @classmethod
    def parse(cls, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()) -> ToolRules:
        """The lists parsed; ``ToolRuleError`` on the first malformed rule."""
        return cls(*(tuple(parse_rule(text) for text in texts) for texts in (allow, ask, deny)))

    def __bool__(self) -> bool:
        return bool(self.allow or self.ask or self.deny)

    def decide(self, tool_name: str, input: Mapping[str, Any]) -> Decision | None:
        """The decision on one call: deny, then ask, then allow; ``None``: a person decides."""
        call = ToolCall(tool_name, input)
        lists: tuple[tuple[Behaviour, tuple[ToolRule, ...]], ...] = (("deny", self.deny), ("ask", self.ask))
        for behaviour, rules in lists:
            unsure = False
            for rule in rules:
                found = rule.matches(call)
                if found:
                    return Decision(behaviour, (rule,))
                unsure = unsure or found is None
            if unsure:  # it may be one this list names: not for the next list to decide
                return None
        every = next(
            (rule for rule in self.allow if rule.covers(tool_name) and rule.kind in ("every", "mcp")), None
        )
        if every is not None:
            return Decision("allow", (every,))
        if tool_name == "Bash":
            return self._allow_commands(call)
        allowed = next((rule for rule in self.allow if rule.matches(call) is True), None)
        return None if allowed is None else Decision("allow", (allowed,))

    def _allow_commands(self, call: ToolCall) -> Decision | None:
        """Allowed only when every command of it is, each by some rule."""
        if not call.parts:
            return None  # not split with confidence, or no command at all
        deciding: list[ToolRule] = []
        for part in call.parts:
            rule = next((r for r in self.allow if r.tool == "Bash" and r.matches_command(part)), None)
            if rule is None:
                return None
            if rule not in deciding:
                deciding.append(rule)
        return Decision("allow", tuple(deciding))


def session_rule(tool_name: str, input: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The rule "Allow for this session" adds, as ``(toolName, ruleContent)`` (§19): Bash the
    exact command, a file tool its path (``//`` before an absolute one, which Claude Code reads as
    absolute, as this module does), WebFetch ``domain:<host>``, an MCP tool no content (the whole
    tool); ``None`` where none can be derived (another tool, a missing field, a command with ``*``
    or a path with glob characters, which would match more than this call)."""
    call = ToolCall(tool_name, input)
    if tool_name.startswith("mcp__"):
        return tool_name, None
    if tool_name == "Bash":
        command = (call.command or "").strip()
        if not command or "*" in command:  # a * would allow more than this command
            return None
        try:
            parse_rule(f"Bash({command})")
        except ToolRuleError:  # unbalanced parentheses: no rule can hold it
            return None
        return tool_name, command
    if tool_name in FILE_FIELDS:
        path = call.field(FILE_FIELDS[tool_name])
        if path is None or any(char in path for char in "*?[]\\()"):
            return None
        path = normal_path(path)
        return tool_name, "/" + path if path.startswith("/") else path
    if tool_name == "WebFetch":
        host = host_of(call.field("url") or "")
        return None if host is None else (tool_name, f"domain:{host}")
    return None
