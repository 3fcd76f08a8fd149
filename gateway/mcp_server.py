"""The MCP server at ``/mcp``: one tool, ``elicit``, exactly as SPEC §4.

Built on the official SDK's low-level ``Server`` and its streamable-HTTP session manager (SSE
responses, stateful sessions for 2025-11-25, handshake-free 2026-07-28 on the same endpoint).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from channels.registry import default_channel
from gateway.callers import ANONYMOUS_CALLER, Caller
from gateway.limits import MAX_BODY_BYTES
from gateway.links import form_url
from gateway.metrics import OPENED
from gateway.runtime import Runtime
from gateway.service import check_request
from gateway.store import Opened
from gateway.waiting import GatewayStopping, Tick, wait_for_end
from schemas.errors import HumangateError, InvalidRequestError, StoreUnavailableError
from schemas.models import Outcome
from schemas.results import duration_text, is_error, result_text, structured_result
from schemas.settings import CHANNEL_NAMES, Settings

logger = logging.getLogger(__name__)

TOOL_NAME = "elicit"

ELICIT_TOOL = types.Tool(
    name=TOOL_NAME,
    description="Request structured input from user via Human Functions",
    input_schema={
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "Message explaining what information is needed"},
            "schema": {"type": "object", "description": "JSON Schema for requested data (flat object only)"},
            "uiType": {
                "type": "string",
                "enum": list(CHANNEL_NAMES),
                "description": "UI platform to use (default: slack)",
            },
        },
        "required": ["message", "schema"],
    },
)
"""The tool as SPEC §4 fixes it (no outputSchema: results carry structuredContent freely)."""

SESSION_IDLE_TIMEOUT = 1800.0
"""Seconds an idle 2025-11-25 session is kept; far longer than the longest wait."""

MAX_SESSIONS = 10_000
"""Most concurrent MCP sessions one process keeps (each waiting call needs at most one)."""

CALLER_STATE_KEY = "humangate_caller"
"""Where the auth middleware leaves the ``Caller`` in the ASGI scope's state."""

RuntimeGetter = Callable[[], Runtime]

STORE_UNAVAILABLE_TEXT = (
    "humangate's store (Redis) is unavailable right now, so this request was not opened; call elicit "
    "again with the same arguments in a few seconds (an identical call never asks the person twice)"
)
"""What the agent sees when Redis cannot be reached as the request is opened."""

OPEN_FAILED_TEXT = (
    "humangate could not open this request because of an internal error (details are in the gateway "
    "log); call elicit again with the same arguments to retry"
)
"""What the agent sees when opening failed unexpectedly (nothing was opened, or an identical call
re-attaches to what was)."""

WAIT_FAILED_TEXT = (
    "humangate could not finish waiting for request {id} because of an internal error (details are in "
    "the gateway log); the request stays pending: call elicit again with the same arguments to re-attach"
)
"""What the agent sees when waiting failed unexpectedly; the request exists and stays pending."""

RESTARTING_TEXT = (
    "humangate is restarting, so this call ends here; request {id} stays pending: call elicit again with "
    "the same arguments to re-attach (the person's answer is kept)"
)
"""What a waiting call returns when its gateway process shuts down."""

STORE_UNREACHABLE_NOTE = (
    "humangate's store is unreachable right now; the request is safe and this call keeps waiting"
)
"""Added to progress messages while the events reader cannot read Redis."""


def _text_result(text: str, *, error: bool, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def _outcome_result(outcome: Outcome, hf_id: str) -> types.CallToolResult:
    return _text_result(
        result_text(outcome), error=is_error(outcome), structured=structured_result(outcome, hf_id)
    )


def _arguments(raw: dict[str, Any] | None, settings: Settings) -> tuple[str, dict[str, Any], str]:
    args = raw or {}
    unknown = sorted(set(args) - {"message", "schema", "uiType"})
    if unknown:
        raise InvalidRequestError(f"Invalid arguments: unknown argument(s): {', '.join(unknown)}")
    channel = args.get("uiType")
    if channel is None:
        channel = default_channel(settings)
    elif channel not in CHANNEL_NAMES:
        raise InvalidRequestError(f"Invalid arguments: uiType: must be one of {', '.join(CHANNEL_NAMES)}")
    if "message" not in args:
        raise InvalidRequestError("Invalid arguments: message: is required")
    if "schema" not in args:
        raise InvalidRequestError("Invalid arguments: schema: is required")
    message, schema = check_request(args["message"], args["schema"], settings)
    return message, schema, channel


def progress_message(tick: Tick, settings: Settings) -> str:
    """Where the request waits and how long is left, for the agent's progress notifications."""
    hf = tick.hf
    where = f"Waiting for a person on {hf.channel} (Human Function {hf.id})"
    if hf.channel == "web":
        where += f" at {form_url(settings, hf)}"
    text = f"{where}; {duration_text(tick.seconds_left)} left"
    if tick.delivery_error:
        text += f". Delivery problem: {tick.delivery_error}"
    if not tick.store_available:
        text += f". {STORE_UNREACHABLE_NOTE}"
    return text


def build_mcp(get_runtime: RuntimeGetter, settings: Settings) -> StreamableHTTPSessionManager:
    """The MCP server and its session manager (to run in the app's lifespan)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ELICIT_TOOL])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        runtime = get_runtime()
        caller: Caller = (
            getattr(ctx.request.state, CALLER_STATE_KEY, ANONYMOUS_CALLER)
            if ctx.request
            else ANONYMOUS_CALLER
        )
        try:
            message, schema, channel = _arguments(params.arguments, runtime.settings)
            hf, opened = await runtime.service.open(caller, channel, message, schema)
        except StoreUnavailableError as exc:
            logger.warning("could not open a request: %s", exc)
            return _text_result(STORE_UNAVAILABLE_TEXT, error=True)
        except HumangateError as exc:
            return _text_result(str(exc), error=True)
        except Exception:
            logger.exception("opening a request failed")
            return _text_result(OPEN_FAILED_TEXT, error=True)
        if opened is Opened.CREATED:
            OPENED.labels(channel=channel).inc()
        if opened is Opened.RETAINED:
            assert hf.outcome is not None
            return _outcome_result(hf.outcome, hf.id)
        last_progress = 0.0
        started = runtime.service.clock()

        async def on_tick(tick: Tick) -> None:
            nonlocal last_progress
            last_progress = max(last_progress + 0.001, round(runtime.service.clock() - started, 3))
            await ctx.session.report_progress(
                last_progress, total=hf.timeout_seconds, message=progress_message(tick, runtime.settings)
            )

        try:
            outcome = await wait_for_end(runtime.service, runtime.events, hf, on_tick)
        except GatewayStopping:
            return _text_result(RESTARTING_TEXT.format(id=hf.id), error=True)
        except Exception:
            # Never leak internals to the agent; the request stays pending and a re-call re-attaches.
            logger.exception("waiting failed hf=%s channel=%s", hf.id, hf.channel)
            return _text_result(WAIT_FAILED_TEXT.format(id=hf.id), error=True)
        return _outcome_result(outcome, hf.id)

    server: Server[Any] = Server(
        "humangate", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return StreamableHTTPSessionManager(
        app=server,
        json_response=False,
        stateless=False,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts(settings),
            allowed_origins=allowed_origins(settings),
        ),
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=SESSION_IDLE_TIMEOUT,
        max_sessions=MAX_SESSIONS,
    )


LOCAL_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
"""Loopback forms always allowed in the Host header (with or without a port)."""


def allowed_hosts(settings: Settings) -> list[str]:
    """``HUMANGATE_ALLOWED_HOSTS``, else the public URL's host plus the localhost forms."""
    if settings.allowed_hosts:
        return list(settings.allowed_hosts)
    return [settings.public_host, *LOCAL_HOSTS]


def allowed_origins(settings: Settings) -> list[str]:
    """Browser origins allowed to call ``/mcp``: the allowed hosts over http and https."""
    return [f"{scheme}://{host}" for host in allowed_hosts(settings) for scheme in ("http", "https")]
