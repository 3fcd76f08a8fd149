"""The inline form as an MCP App (extension ``io.modelcontextprotocol/ui``, docs/tools.md#the-inline-form).

``elicit`` names ``ui://humangate/form.html`` in ``_meta.ui.resourceUri``; a host that speaks MCP Apps
reads that resource and renders it beside the call. The page is one self-contained file (no external
loads, agent text only ever set as text, never as HTML): it is handed the call's arguments by the
host, renders the flat schema, and answers through the app-only tool ``answer_request``
(``gateway.mcp.answering``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

FORM_URI = "ui://humangate/form.html"
"""The app every asking tool shows inline."""

UI_EXTENSION = EXTENSION_ID
"""``io.modelcontextprotocol/ui``, advertised in the server's capabilities."""

FORM_RESOURCE = types.Resource(
    uri=FORM_URI,
    name="humangate-form",
    title="humangate: answer in the chat",
    description="The inline form of a humangate request: answer it without leaving the agent's client",
    mime_type=APP_MIME_TYPE,
)
"""How ``resources/list`` shows the app."""


@cache
def form_html() -> str:
    """The app's HTML (read once from the package)."""
    return resources.files("gateway.mcp").joinpath("static/form.html").read_text(encoding="utf-8")


def list_resources() -> types.ListResourcesResult:
    """``resources/list``: the one app resource."""
    return types.ListResourcesResult(resources=[FORM_RESOURCE])


def read_resource(uri: str) -> types.ReadResourceResult | None:
    """``resources/read`` of the app; ``None`` for any other URI."""
    if uri != FORM_URI:
        return None
    content = types.TextResourceContents(
        uri=FORM_URI,
        mime_type=APP_MIME_TYPE,
        text=form_html(),
        # No external domains at all: the host's default (strictest) CSP fits the page as it is.
        _meta={"ui": {"prefersBorder": True}},
    )
    return types.ReadResourceResult(contents=[content])
