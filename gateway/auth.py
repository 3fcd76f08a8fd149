"""Authentication in front of ``/mcp``: a wrong key is a 401 before any MCP handling."""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
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


def _error(exc: HumangateError) -> JSONResponse:
    return JSONResponse(error_body(exc), status_code=status_of(exc), headers=error_headers(exc))
