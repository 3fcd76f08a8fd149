"""The rule "Allow for this session" adds (docs/permissions.md#allow-for-this-session): what the
person saw on the button, in Claude Code's rule syntax."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

FILE_TOOLS = {
    "Read": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
"""Claude Code's file tools and the input field holding their path."""


def session_rule(tool: str, call_input: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """(``toolName``, ``ruleContent``) of the session rule for this call: Bash the exact command, a
    file tool the path, WebFetch ``domain:<host>``, another MCP server's tool no content; ``None``
    where none can be derived (the person then gets Allow and a decline only)."""
    if tool.startswith("mcp__") and tool.count("__") >= 2:
        return tool, None
    if tool == "Bash":
        command = call_input.get("command")
        return (tool, command.strip()) if isinstance(command, str) and command.strip() else None
    if tool in FILE_TOOLS:
        path = call_input.get(FILE_TOOLS[tool])
        return (tool, path) if isinstance(path, str) and path.strip() else None
    if tool == "WebFetch":
        url = call_input.get("url")
        try:
            host = urlsplit(url).hostname if isinstance(url, str) else None
        except ValueError:
            host = None
        return (tool, f"domain:{host}") if host else None
    return None
