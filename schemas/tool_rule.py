"""One tool permission rule (docs/policies.md#tool-rules) in Claude Code's syntax, parsed
once, and whether it names a tool call; ``schemas.tool_rules`` decides a call by a policy's lists.

A rule is ``Tool`` (every use) or ``Tool(specifier)``; ``mcp__server`` (every tool of a server) or
``mcp__server__tool``. What a specifier is depends on the tool (``SPECIFIED``): a command pattern
for Bash (``*`` any characters), a path pattern for file tools (``schemas.path_globs``),
``domain:<host>`` for WebFetch, a name pattern for Task, Agent and Skill; other tools take none, and
a specifier on them is a mistake. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal
from urllib.parse import urlsplit

from schemas.errors import ToolRuleError
from schemas.path_globs import PathPattern, compile_path, normal_path
from schemas.shell_words import normalized, split_command

PARSED_RULES = 4096
"""Rules kept parsed (``parse_rule``'s cache): more than any policy file holds."""

Kind = Literal["every", "command", "path", "domain", "name", "mcp"]

FILE_FIELDS = {
    "Read": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
    "Glob": "path",
    "Grep": "path",
    "LS": "path",
}
"""The file tools, and the input field holding the path their rules' patterns match."""

FAMILIES = {"Edit": ("Edit", "MultiEdit", "Write", "NotebookEdit"), "Read": ("Read", "Glob", "Grep", "LS")}
"""As in Claude Code, an ``Edit`` rule covers every tool that edits files, a ``Read`` rule every one
that reads them; a ``Write(...)`` rule covers Write alone."""

SPECIFIED: dict[str, tuple[Kind, str]] = {
    "Bash": ("command", "command"),
    "WebFetch": ("domain", "url"),
    "Task": ("name", "subagent_type"),
    "Agent": ("name", "subagent_type"),
    "Skill": ("name", "skill"),
    **{tool: ("path", field) for tool, field in FILE_FIELDS.items()},
}
"""The tools that take a specifier: what kind it is, and the input field it is matched against."""

_TOOL_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*")
_MCP_PART = re.compile(r"[A-Za-z0-9_.-]+")
_HOST = re.compile(r"(\*\.)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*")
_WRAPPER = re.compile(
    r"(?:nohup|time|nice(?: -n ?-?\d+| -\d+)?|timeout(?: -\S+)* \d+(?:\.\d+)?[smhd]?) (.+)", re.DOTALL
)
"""Commands that run the rest of the line unchanged: a rule judges the command they run as well."""


@dataclass(frozen=True, slots=True)
class ToolRule:
    """One rule as written (``text``) and compiled: which tools it covers, what it matches."""

    text: str
    tool: str
    """The rule's tool name (``Bash``; ``mcp__github`` for a whole server)."""
    kind: Kind
    specifier: str | None
    pattern: Wildcards | None = None
    """Commands and names: the specifier, split at its ``*``."""
    path: PathPattern | None = None

    def covers(self, tool_name: str) -> bool:
        """Whether this rule is about ``tool_name`` at all."""
        if self.kind == "mcp":
            return tool_name == self.tool or (
                self.specifier is None and tool_name.startswith(self.tool + "__")
            )
        return tool_name in FAMILIES.get(self.tool, (self.tool,))

    def matches(self, call: ToolCall) -> bool | None:
        """Whether the call is one this rule names (a Bash command: any of its commands, or its
        whole text); ``None`` when that cannot be told (the field is missing, the path relative)."""
        if not self.covers(call.tool_name):
            return False
        if self.kind in ("every", "mcp"):
            return True
        if self.kind == "command":
            if call.command is None:
                return None
            return any(self.matches_command(part) for part in (*(call.parts or ()), call.whole))
        value = call.field(SPECIFIED[call.tool_name][1] if call.tool_name in SPECIFIED else "")
        if value is None:
            return None
        if self.kind == "path" and self.path is not None:
            return self.path.matches(normal_path(value))
        if self.kind == "domain":
            host = host_of(value)
            return None if host is None else _domain_matches(self.specifier or "", host)
        return self.pattern is not None and self.pattern.matches(value)

    def matches_command(self, command: str) -> bool:
        """Whether one command (already split) matches, as written or without a wrapper
        (``timeout 60 npm test`` is ``npm test`` too)."""
        if self.kind == "every":
            return True
        while self.pattern is not None:
            if self.pattern.matches(command):
                return True
            unwrapped = _WRAPPER.fullmatch(command)
            if unwrapped is None:
                return False
            command = unwrapped.group(1)
        return False


class ToolCall:
    """One call as the rules see it; what they need of it is worked out once, when first asked."""

    def __init__(self, tool_name: str, input: Mapping[str, Any]) -> None:
        self.tool_name = tool_name
        self.input = input

    def field(self, name: str) -> str | None:
        value = self.input.get(name) if isinstance(self.input, Mapping) else None
        return value if isinstance(value, str) and value else None

    @cached_property
    def command(self) -> str | None:
        return self.field("command") if self.tool_name == "Bash" else None

    @cached_property
    def parts(self) -> tuple[str, ...] | None:
        """The commands it runs; ``None`` when it cannot be split with confidence."""
        return None if self.command is None else split_command(self.command)

    @cached_property
    def whole(self) -> str:
        return normalized(self.command or "")


@lru_cache(maxsize=PARSED_RULES)
def parse_rule(text: str) -> ToolRule:
    """One rule; ``ToolRuleError`` naming it and what is wrong. Cached: a rule is immutable, and
    the policy file's checker and its model both ask for it."""
    try:
        return _parse(text)
    except ValueError as exc:
        raise ToolRuleError(f"{text!r} is not a tool rule: {exc}") from None


def _parse(text: str) -> ToolRule:
    name, specifier = _split(text)
    if name.startswith("mcp__"):
        server, between, tool = name[5:].partition("__")
        if not _MCP_PART.fullmatch(server) or (between and tool != "*" and not _MCP_PART.fullmatch(tool)):
            raise ValueError("an MCP rule is mcp__<server> or mcp__<server>__<tool>")
        if specifier is not None:
            raise ValueError("an MCP rule takes no specifier")
        whole = not tool or tool == "*"
        return ToolRule(text, f"mcp__{server}" if whole else name, "mcp", None if whole else tool)
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a tool name (like Bash or Read, or mcp__<server>__<tool>)")
    if specifier is None or specifier.strip() == "*":
        return ToolRule(text, name, "every", None)
    if name not in SPECIFIED:
        raise ValueError(f"{name} takes no specifier (only {', '.join(SPECIFIED)} do); write {name} alone")
    kind = SPECIFIED[name][0]
    specifier = specifier.strip()
    if kind == "command":
        return ToolRule(text, name, kind, specifier, pattern=_command_pattern(normalized(specifier)))
    if kind == "path":
        return ToolRule(text, name, kind, specifier, path=compile_path(specifier))
    if kind == "domain":
        host = specifier.removeprefix("domain:").lower()
        if not specifier.startswith("domain:") or not _HOST.fullmatch(host):
            raise ValueError(
                "a WebFetch rule is WebFetch(domain:<host>), like domain:example.com or domain:*.example.com"
            )
        return ToolRule(text, name, kind, host)
    return ToolRule(text, name, kind, specifier, pattern=_wildcards(specifier))


def _split(text: str) -> tuple[str, str | None]:
    """``Tool(specifier)`` -> the name and the specifier (``\\(`` and ``\\)`` unescaped)."""
    if not text.strip():
        raise ValueError("it is empty")
    if "(" not in text:
        if ")" in text:
            raise ValueError("')' without '('")
        return text, None
    name, rest = text.split("(", 1)
    if not rest.endswith(")"):
        raise ValueError("missing ')' at the end" if ")" not in rest else "text after the closing ')'")
    inner, depth, escaped = rest[:-1], 0, False
    for char in inner:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "()":
            depth += 1 if char == "(" else -1
            if depth < 0:
                raise ValueError("unbalanced parentheses (escape a literal one as \\( or \\))")
    if depth:
        raise ValueError("unbalanced parentheses (escape a literal one as \\( or \\))")
    if not inner.strip():
        raise ValueError(f"an empty specifier: write {name} alone for every use")
    return name, inner.replace("\\(", "(").replace("\\)", ")")


def _command_pattern(specifier: str) -> Wildcards:
    """``*`` any characters; a final `` *`` (or the legacy ``:*``) also the command alone, so
    ``npm test *`` matches ``npm test`` and ``npm test -- x`` but not ``npm tested``."""
    if specifier.endswith(":*"):
        specifier = specifier[:-2].rstrip() + " *"
    bare = specifier[:-2] if specifier.endswith(" *") else None
    return _wildcards(specifier, bare)


def _wildcards(specifier: str, bare: str | None = None) -> Wildcards:
    return Wildcards(tuple(specifier.split("*")), bare)


@dataclass(frozen=True, slots=True)
class Wildcards:
    """A pattern whose only special character is ``*`` (any characters), matched in linear passes
    (``str.find`` of each piece in turn) rather than by a regular expression, which could
    backtrack for a long time over a long command with several ``*``."""

    pieces: tuple[str, ...]
    bare: str | None = None
    """Also matched exactly (``npm test`` for ``npm test *``)."""

    def matches(self, text: str) -> bool:
        if text == self.bare:
            return True
        first, last = self.pieces[0], self.pieces[-1]
        if len(self.pieces) == 1:
            return text == first
        if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
            return False
        at, end = len(first), len(text) - len(last)
        for piece in self.pieces[1:-1]:  # leftmost first is never worse for the pieces after it
            found = text.find(piece, at, end)
            if found < 0:
                return False
            at = found + len(piece)
        return True


def host_of(url: str) -> str | None:
    """The host of a URL, lowercase, without a port or a final dot; ``None`` without one."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host.rstrip(".") if host else None


def _domain_matches(domain: str, host: str) -> bool:
    """``*.python.org``: its subdomains (not ``python.org`` itself); else the host exactly."""
    if domain.startswith("*."):
        return host.endswith(domain[1:])
    return host == domain
