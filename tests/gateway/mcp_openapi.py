"""An OpenAPI description of ``POST /mcp`` for schemathesis (``test_openapi``): MCP is JSON-RPC over
one path, not a REST API, so it is not in humangate's own OpenAPI; this one tells the fuzzer what
a JSON-RPC request to humangate looks like, in each protocol era."""

from __future__ import annotations

from typing import Any

TOOLS = [
    "elicit",
    "ask_user_question",
    "request_human_input",
    "request_user_input",
    "approval_prompt",
    "answer_request",
    "show_message",
]
LEGACY_METHODS = [
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "tasks/get",
    "tasks/result",
    "tasks/cancel",
    "notifications/initialized",
    "notifications/cancelled",
]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def mcp_openapi(era: str) -> dict[str, Any]:
    """``2025-11-25``: every method on a session (its id is sent as a header by the fuzzer);
    ``2026-07-28``: ``tools/call`` of ``elicit`` (the fuzzer sends the matching ``Mcp-Method`` and
    ``Mcp-Name`` headers, which must agree with the body)."""
    legacy = era == "2025-11-25"
    params: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": TOOLS if legacy else ["elicit"]},
            "arguments": {
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "schema": {"type": "object"},
                    "uiType": {"type": "string"},
                    "prompt": {"type": "string"},
                    "questions": {"type": "array"},
                    "type": {"type": "string"},
                    "options": {"type": "array"},
                    "timeout": {"type": "number"},
                },
            },
            "uri": {"type": "string"},
            "taskId": {"type": "string"},
        },
    }
    if not legacy:
        params["properties"]["_meta"] = {"type": "object", "enum": [MODERN_META]}
        params["required"] = ["name", "arguments", "_meta"]
    body = {
        "type": "object",
        "required": ["jsonrpc", "id", "method", "params"],
        "properties": {
            "jsonrpc": {"type": "string", "enum": ["2.0"]},
            "id": {"type": "integer"},
            "method": {"type": "string", "enum": LEGACY_METHODS if legacy else ["tools/call"]},
            "params": params,
        },
    }
    statuses = ["200", "202", "400", "404", "406", "413", "415", "422", "429"]
    return {
        "openapi": "3.1.0",
        "info": {"title": f"humangate MCP ({era})", "version": "0"},
        "paths": {
            "/mcp": {
                "post": {
                    "operationId": "mcp",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                    "responses": {status: {"description": "a JSON-RPC answer"} for status in statuses},
                }
            }
        },
    }
