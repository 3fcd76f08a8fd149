"""Authentication in front of ``/mcp``: a wrong key is a 401 before any MCP handling.

A refusal here is a JSON-RPC error body (``id`` null), its ``message`` saying what is wrong and how
to get a key, and ``data`` humangate's error body: MCP clients show a JSON-RPC error's message
to their user (the official Python SDK reads it at any HTTP status), where humangate's own body
would become "Server returned an error response"."""

from __future__ import annotations

from collections.abc import Callable

from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.core.callers import CALLER_STATE_KEY
from gateway.errors import error_body, error_headers, status_of
from gateway.runtime import Runtime
from schemas.errors import AuthError, HumangateError, StoreUnavailableError


class CallerAuth:
    """ASGI wrapper: identifies the caller from ``Authorization`` and stores it in the scope state."""

    def __init__(self, app: ASGIApp, get_runtime: Callable[[], Runtime]) -> None:
        self.app = app
        self.get_runtime = get_runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                header = value.decode("latin-1")
        try:
            client = scope.get("client")
            address = str(client[0]) if client else ""
            caller = await self.get_runtime().keyring.identify(header, address)
        except (AuthError, StoreUnavailableError) as exc:
            await _error(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})[CALLER_STATE_KEY] = caller
        await self.app(scope, receive, send)


REFUSAL_PREFIXES = {401: "Unauthorized: ", 503: "Service unavailable: "}
"""How the JSON-RPC message of a refusal starts, by status."""


def _error(exc: HumangateError) -> Response:
    status = status_of(exc)
    body = error_body(exc)
    message = f"{REFUSAL_PREFIXES.get(status, '')}{body['detail']}"
    error = ErrorData(code=INVALID_REQUEST, message=message, data=body)
    refusal = JSONRPCError(jsonrpc="2.0", id=None, error=error)
    return JSONResponse(
        refusal.model_dump(mode="json", by_alias=True), status_code=status, headers=error_headers(exc)
    )
