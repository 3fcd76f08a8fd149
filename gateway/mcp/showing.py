"""``show_message``: the app-only tool the inline form reads its message through
(docs/tools.md#the-inline-form).

The app is handed the asking call's arguments by the host, so it has the agent's Markdown, but it
must never parse agent text as HTML itself. It asks this tool for the message as the same cleaned
HTML the web form shows (``channels.pages.message_html``: escaped, then cleaned by ``nh3`` with an
allow-list) and inserts only that; until the answer comes, or where the host cannot call tools, it
shows the message as text. The tool renders the text it is given and reads nothing else, so it
tells a caller nothing it did not send.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from channels.pages import message_html, message_plain_text
from gateway.mcp.app import FORM_URI
from gateway.mcp.call import Call
from gateway.mcp.texts import text_result
from schemas.errors import InvalidRequestError
from schemas.text import utf8_size

NAME = "show_message"

TOOL = types.Tool(
    name=NAME,
    description=(
        "The message of the call an inline humangate form sits beside, as the cleaned HTML the form "
        "shows (called by the form app, not by the model)"
    ),
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message of the asking call"}},
        "required": ["message"],
    },
    _meta={"ui": {"resourceUri": FORM_URI, "visibility": ["app"]}},
)
"""Visible to the app only (``_meta.ui.visibility``), like ``answer_request``."""


async def show_message(call: Call, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """The message as plain text (``content``) and as cleaned HTML (``structuredContent.html``)."""
    args = arguments or {}
    unknown = sorted(set(args) - {"message"})
    if unknown:
        return text_result(f"Invalid arguments: unknown argument(s): {', '.join(unknown)}", error=True)
    message = args.get("message")
    if not isinstance(message, str):
        return text_result("Invalid arguments: message: must be a string", error=True)
    limit = call.runtime.settings.max_message_bytes
    try:
        size = utf8_size("message", message)
    except InvalidRequestError as exc:
        return text_result(f"Invalid arguments: {exc}", error=True)
    if size > limit:
        return text_result(f"Invalid arguments: message: must be at most {limit} bytes", error=True)
    return text_result(message_plain_text(message), error=False, structured={"html": message_html(message)})
