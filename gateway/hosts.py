"""Which Host and Origin headers humangate answers to: DNS-rebinding protection for every route a
browser or an agent reaches by name (``/mcp`` through the SDK, ``/v1`` and the form here).

A page on another site can make a browser send requests to ``127.0.0.1:8000`` by pointing its own
domain there; the Host (and Origin) header still names that other site, so such requests are
refused. ``HUMANGATE_ALLOWED_HOSTS`` sets the accepted hosts (default: the host of
``HUMANGATE_PUBLIC_URL`` plus the localhost forms).
"""

from __future__ import annotations

import logging

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.settings import Settings

logger = logging.getLogger(__name__)

LOCAL_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
"""Loopback forms always allowed in the Host header (with or without a port)."""

CHECKED = ("/v1/", "/f/", "/inbox", "/auth/")
"""Path prefixes this middleware checks (``/mcp`` is checked by the SDK with the same rules;
platform webhooks are signed, and called by the platforms under the public host)."""

ORIGIN_EXEMPT = ("/f/", "/inbox", "/auth/")
"""Paths whose Origin the form, the inbox and the web sign-out check themselves on every post: a
browser posting a form under ``Referrer-Policy: no-referrer`` sends ``Origin: null``, and Fetch
Metadata decides there (the inbox's pages and stream also need its SameSite=Strict session cookie)."""


def allowed_hosts(settings: Settings) -> list[str]:
    """``HUMANGATE_ALLOWED_HOSTS``, else the public URL's host plus the localhost forms."""
    if settings.allowed_hosts:
        return list(settings.allowed_hosts)
    return [settings.public_host, *LOCAL_HOSTS]


def allowed_origins(settings: Settings) -> list[str]:
    """Browser origins allowed: the allowed hosts over http and https."""
    return [f"{scheme}://{host}" for host in allowed_hosts(settings) for scheme in ("http", "https")]


def matches(value: str, allowed: list[str]) -> bool:
    """``value`` is one of ``allowed``, where ``name:*`` stands for ``name`` with any port."""
    if value in allowed:
        return True
    return any(pattern.endswith(":*") and value.startswith(pattern[:-1]) for pattern in allowed)


class HostCheck:
    """ASGI middleware: 421 for a Host, 403 for an Origin that is not humangate's (on ``CHECKED``)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.hosts = allowed_hosts(settings)
        self.origins = allowed_origins(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(CHECKED):
            await self.app(scope, receive, send)
            return
        host, origin = "", None
        for name, value in scope["headers"]:  # only the two it needs, not a dict of all of them
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
        if not matches(host, self.hosts):
            logger.warning("refused a request for host %r on %s", host[:100], path.split("/", 2)[1])
            await _refuse("host", "Host", host, 421)(scope, receive, send)
            return
        if origin is not None and not path.startswith(ORIGIN_EXEMPT) and not matches(origin, self.origins):
            logger.warning("refused a request from origin %r", origin[:100])
            await _refuse("origin", "Origin", origin, 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _refuse(what: str, header: str, value: str, status: int) -> JSONResponse:
    detail = (
        f"{header}: {value[:100]!r} is not one of humangate's {what}s (set HUMANGATE_ALLOWED_HOSTS to "
        "the names it is reached by)"
    )
    return JSONResponse({"error": "InvalidHostError", "detail": detail}, status_code=status)
