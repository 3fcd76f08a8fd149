"""A tool call as the person deciding on it reads it (docs/permissions.md#what-a-person-sees).

One Markdown message per call, rendered on every surface like any message (docs/rendering.md):
"<caller> wants to use <tool>", then the call in the form that tool's calls are read in (a command
as code, an edit as a unified diff with its path, a new file's first lines, a URL's host, an MCP
tool's arguments as JSON). Names are escaped and code fenced (``channels.document.source``), so what
the agent sends cannot restyle the message; values that look like secrets are masked
(``gateway.permissions.secrets``). A call too large for one message shows its first lines and says
how many more there are: the agent still gets its input back whole.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from channels.document.source import code_span, escape_markdown, fenced
from gateway.permissions.secrets import mask

WRITE_PREVIEW_LINES = 40
"""Lines of a new file (``Write``) shown."""

MAX_DIFF_LINES = 2000
"""Lines of an edit's old and new text compared (difflib's time grows with their product)."""

MAX_LINE_CHARS = 4000
"""A longer line of a call too large for one message is shown cut."""

RESERVED_BYTES = 1024
"""Room kept for the message's own words when a call's code is cut to fit the message limit."""

Describe = Callable[[Mapping[str, Any]], list[str]]


def describe_call(caller: str, tool: str, call_input: Mapping[str, Any], max_bytes: int) -> str:
    """The message a person reads about ``caller``'s call of ``tool`` with ``call_input``, in Markdown,
    at most ``max_bytes`` bytes of UTF-8."""
    server, mcp_tool = mcp_parts(tool)
    if server is not None:
        lead = (
            f"**{escape_markdown(caller)}** wants to use **{escape_markdown(mcp_tool or '')}** from the MCP "
            f"server **{escape_markdown(server)}**"
        )
        parts = [lead, *_json_parts(call_input)]
    else:
        lead = f"**{escape_markdown(caller)}** wants to use **{escape_markdown(tool)}**"
        parts = [lead, *_DESCRIBE.get(tool, _json_parts)(call_input)]
    # Cut before masking too: the masks' patterns then run over at most twice the message, never
    # over a whole mebibyte of input on the event loop.
    text = _fit("\n\n".join(part for part in parts if part), 2 * max_bytes)
    return _fit(mask(text), max_bytes)


def mcp_parts(tool: str) -> tuple[str | None, str | None]:
    """``mcp__github__delete_repository`` -> (``github``, ``delete_repository``); (``None``, ``None``)
    for a tool that is not another MCP server's."""
    if not tool.startswith("mcp__"):
        return None, None
    server, _, name = tool[len("mcp__") :].partition("__")
    return (server or None, name or None) if server else (None, None)


def _text(call_input: Mapping[str, Any], name: str) -> str:
    value = call_input.get(name)
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _quote(text: str) -> str:
    """The agent's own words about the call (a description, a prompt) as a quote: Markdown, like
    every text of the agent's."""
    if not text.strip():
        return ""
    return "\n".join("> " + line if line.strip() else ">" for line in text.strip().split("\n"))


def _bash(call_input: Mapping[str, Any]) -> list[str]:
    return [_quote(_text(call_input, "description")), fenced(_text(call_input, "command"), "bash")]


def _path_line(call_input: Mapping[str, Any], key: str = "file_path") -> str:
    return "File: " + code_span(_text(call_input, key) or "(no path)")


def _edit(call_input: Mapping[str, Any]) -> list[str]:
    path = _text(call_input, "file_path")
    edits = call_input.get("edits")
    pairs: list[Mapping[str, Any]] = (
        [edit for edit in edits if isinstance(edit, Mapping)] if isinstance(edits, list) else [call_input]
    )
    diffs = [_diff(path, _text(edit, "old_string"), _text(edit, "new_string")) for edit in pairs]
    every = " (every occurrence)" if any(edit.get("replace_all") is True for edit in pairs) else ""
    return [_path_line(call_input) + every, fenced("\n".join(diffs), "diff")]


def _diff(path: str, old: str, new: str) -> str:
    before, after = old.split("\n"), new.split("\n")
    name = path.lstrip("/")
    lines = list(
        difflib.unified_diff(
            before[:MAX_DIFF_LINES],
            after[:MAX_DIFF_LINES],
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
            lineterm="",
        )
    )
    if len(before) > MAX_DIFF_LINES or len(after) > MAX_DIFF_LINES:
        lines.append(f"(compared the first {MAX_DIFF_LINES} lines of {len(before)} and {len(after)})")
    return "\n".join(lines) or "(no change)"


def _write(call_input: Mapping[str, Any]) -> list[str]:
    content = _text(call_input, "content")
    lines = content.split("\n")
    size = f"{len(content.encode())} bytes, {len(lines)} line{'s' if len(lines) != 1 else ''}"
    shown = "\n".join(lines[:WRITE_PREVIEW_LINES])
    more = len(lines) - WRITE_PREVIEW_LINES
    note = f"The first {WRITE_PREVIEW_LINES} lines; {more} more not shown." if more > 0 else ""
    return [
        f"{_path_line(call_input)} ({size})",
        fenced(shown, _language_of(_text(call_input, "file_path"))),
        note,
    ]


def _read(call_input: Mapping[str, Any]) -> list[str]:
    offset, limit = call_input.get("offset"), call_input.get("limit")
    start = offset if isinstance(offset, int) and not isinstance(offset, bool) else None
    count = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    if start is None and count is None:
        span = "the whole file"
    elif count is None:
        span = f"from line {start}"
    else:
        first = start or 1
        span = f"lines {first} to {first + count - 1}"
    return [f"{_path_line(call_input)}, {span}"]


def _web_fetch(call_input: Mapping[str, Any]) -> list[str]:
    url = _text(call_input, "url")
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return [
        "URL: " + code_span(url) + (f" (host {code_span(host)})" if host else ""),
        _quote(_text(call_input, "prompt")),
    ]


def _web_search(call_input: Mapping[str, Any]) -> list[str]:
    return ["Search for: " + code_span(_text(call_input, "query"))]


def _task(call_input: Mapping[str, Any]) -> list[str]:
    kind = _text(call_input, "subagent_type")
    head = (
        "Task: "
        + escape_markdown(_text(call_input, "description"))
        + (f" ({escape_markdown(kind)})" if kind else "")
    )
    return [head, _quote(_text(call_input, "prompt"))]


def _json_parts(call_input: Mapping[str, Any]) -> list[str]:
    return ["Arguments:", fenced(json.dumps(call_input, indent=2, ensure_ascii=False), "json")]


_DESCRIBE: dict[str, Describe] = {
    "Bash": _bash,
    "Edit": _edit,
    "MultiEdit": _edit,
    "Write": _write,
    "Read": _read,
    "WebFetch": _web_fetch,
    "WebSearch": _web_search,
    "Task": _task,
    "Agent": _task,
}
"""How each of Claude Code's tools is read; any other tool shows its input as JSON."""

_LANGUAGES = {"py": "python", "js": "javascript", "ts": "typescript", "sh": "bash", "md": "markdown"}


def _language_of(path: str) -> str:
    suffix = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return _LANGUAGES.get(suffix, suffix)


def _fit(message: str, max_bytes: int) -> str:
    """``message`` if it fits in ``max_bytes``, else its first lines and how many were left out (a
    cut inside a code block closes the block)."""
    if len(message.encode()) <= max_bytes:
        return message
    lines = [
        line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "\u2026"
        for line in message.split("\n")
    ]
    kept: list[str] = []
    used = 0
    fence = ""
    budget = max_bytes - RESERVED_BYTES
    for line in lines:
        cost = len(line.encode()) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
        stripped = line.lstrip()
        if stripped.startswith("```"):
            ticks = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            fence = "" if fence and ticks.startswith(fence) and stripped == ticks else fence or ticks
    left = len(lines) - len(kept)
    tail = [fence] if fence else []
    return "\n".join([*kept, *tail, "", f"({left} more lines not shown; the agent's call is unchanged.)"])
