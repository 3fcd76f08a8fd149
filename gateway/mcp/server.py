"""The SDK's low-level ``Server`` and its streamable-HTTP session manager (SSE responses, stateful
sessions for 2025-11-25, handshake-free 2026-07-28 on the same endpoint), serving ``TOOLS``, the
inline form app's resource, and tasks (docs/tools.md#answering-in-the-agents-client)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.core.callers import ANONYMOUS_CALLER, CALLER_STATE_KEY, Caller
from gateway.hosts import allowed_hosts, allowed_origins
from gateway.limits import MCP_BODY_BYTES
from gateway.mcp import app
from gateway.mcp.asking import ResultOf, ask
from gateway.mcp.bodies import arguments_of
from gateway.mcp.call import Call, Question
from gateway.mcp.sessions import LOCAL_IDLE_TIMEOUT, SharedSessionManager
from gateway.mcp.task_methods import LegacyTaskCalls, TaskMethods, TaskUpdateParams
from gateway.mcp.tasks import TASKS_EXTENSION, start_task, task_era
from gateway.mcp.tools import TOOLS
from gateway.runtime import Runtime
from schemas.settings import Settings

logger = logging.getLogger(__name__)

MAX_SESSIONS = 10_000
"""Most concurrent MCP sessions one process keeps (each waiting call needs at most one)."""

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code of a ``resources/read`` for a URI that does not exist."""

RuntimeGetter = Callable[[], Runtime]


def caller_of(ctx: ServerRequestContext[Any]) -> Caller:
    """Who makes this MCP request (set by ``gateway.auth.CallerAuth``)."""
    if ctx.request is None:
        return ANONYMOUS_CALLER
    caller: Caller = getattr(ctx.request.state, CALLER_STATE_KEY, ANONYMOUS_CALLER)
    return caller


LEGACY_TASKS = types.ServerTasksCapability(
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)
"""What a 2025-11-25 ``initialize`` result says about tasks: ``tools/call`` may run as one, and
``tasks/cancel`` withdraws it (there is no ``tasks/list``: nobody lists another caller's tasks)."""


class HumangateServer(Server[Any]):
    """The SDK's server, advertising 2025-11-25 tasks in the handshake (the SDK derives capabilities
    from handlers, and tasks are no handler it knows)."""

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            return capabilities
        return capabilities.model_copy(update={"tasks": LEGACY_TASKS})


def build_mcp(get_runtime: RuntimeGetter, settings: Settings) -> SharedSessionManager:
    """The MCP server and its session manager (to run in the app's lifespan; give it its registry
    once Redis is connected)."""

    def call_of(ctx: ServerRequestContext[Any]) -> Call:
        return Call(get_runtime(), caller_of(ctx), ctx)

    async def question_of(
        call: Call, params: types.CallToolRequestParams
    ) -> tuple[Question | types.CallToolResult, ResultOf] | None:
        entry = TOOLS.get(params.name)
        if entry is None or not entry.task_support:
            return None
        return await entry.prepare(call, arguments_of(call.ctx, params)), entry.result_of

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[entry.definition for entry in TOOLS.values()])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> HandlerResult:
        entry = TOOLS.get(params.name)
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        call = call_of(ctx)
        prepared = await entry.prepare(call, arguments_of(ctx, params))
        if isinstance(prepared, types.CallToolResult):
            return prepared
        if entry.task_support and task_era(call, params) == "2026":
            return await start_task(call, params.name, prepared, entry.result_of, "2026")
        return await ask(call, prepared, prepared.result_of or entry.result_of, params.name)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return app.list_resources()

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        found = app.read_resource(str(params.uri))
        if found is None:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {params.uri}")
        return found

    def input_schema(name: str) -> dict[str, Any] | None:
        # Without this, the SDK runs the whole tools/list handler on every 2026-07-28 call to find
        # the schema it checks Mcp-Param-* headers against (an eighth of the gateway's CPU).
        entry = TOOLS.get(name)
        return None if entry is None else entry.definition.input_schema

    server = HumangateServer(
        "humangate",
        version="0.1.0",
        on_list_tools=list_tools,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        get_tool_input_schema=input_schema,
    )
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    server.extensions = {app.UI_EXTENSION: {}, TASKS_EXTENSION: {}}
    methods = TaskMethods(call_of, lambda tool: TOOLS[tool].result_of)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, methods.get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, methods.result)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, methods.cancel)
    server.add_request_handler("tasks/update", TaskUpdateParams, methods.update)
    server.middleware.append(LegacyTaskCalls(call_of, question_of))
    manager = SharedSessionManager(
        app=server,
        json_response=False,
        stateless=False,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts(settings),
            allowed_origins=allowed_origins(settings),
        ),
        max_request_body_size=MCP_BODY_BYTES,
        session_idle_timeout=LOCAL_IDLE_TIMEOUT,
        max_sessions=MAX_SESSIONS,
    )
    manager.sessions_per_key = settings.max_sessions
    manager.sessions_per_address = settings.anonymous_max_sessions
    return manager
