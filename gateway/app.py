"""The FastAPI application: MCP at ``/mcp``, web forms, the inbox, webhooks, REST, health."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import AsyncIterator
from types import FrameType

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.routing import Route

from channels.registry import channel_names
from gateway import docs, health, home, rest
from gateway.auth import CallerAuth
from gateway.collector import paced_collector, tune_collector
from gateway.core.events import Events
from gateway.core.metrics import start_at_zero
from gateway.core.service import Clock
from gateway.errors import install_error_handlers
from gateway.hosts import HostCheck
from gateway.inbox import routes as inbox
from gateway.limits import BodySizeLimit, current_limits
from gateway.logs import configure_logging
from gateway.mcp.bodies import McpBodies
from gateway.mcp.delivery import DeliveryWatching
from gateway.mcp.entry import MCP_METHODS, MCP_PATH, McpEntry
from gateway.mcp.replies import ReplyRouter
from gateway.mcp.server import build_mcp
from gateway.mcp.session_registry import SessionRegistry
from gateway.mounts import channel_routes
from gateway.openings import held_openings
from gateway.runtime import Runtime, open_runtime
from gateway.signin import router as sign_in_router
from gateway.signin.provider import Provider
from schemas.settings import Settings, get_settings


def served_app() -> FastAPI:
    """The app of one ``humangate serve`` process (uvicorn's factory; with ``--workers N`` each
    process starts bare, so logging is set up here too). Waiting calls end cleanly on SIGTERM."""
    configure_logging()
    tune_collector()
    return create_app(get_settings(), served=True)


def release_waiting_calls_on_signal(events: Events) -> None:
    """Chain a handler before uvicorn's SIGTERM/SIGINT handlers that ends every waiting call at once
    (with a "restarting, call again" result), so uvicorn's graceful shutdown finds them finished."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)

        def handler(number: int, frame: FrameType | None, previous: object = previous) -> None:
            loop.call_soon_threadsafe(events.release_all)
            if callable(previous):
                previous(number, frame)

        signal.signal(signum, handler)


def create_app(
    settings: Settings | None = None, clock: Clock | None = None, *, served: bool = False
) -> FastAPI:
    """Build the app; Redis connections and background tasks start in its lifespan."""
    settings = settings or get_settings()
    start_at_zero(channel_names())
    holder: dict[str, Runtime] = {}

    def get_runtime() -> Runtime:
        return holder["runtime"]

    session_manager = build_mcp(get_runtime, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_runtime(settings, clock) as runtime:
            holder["runtime"] = runtime
            app.state.runtime = runtime
            session_manager.registry = SessionRegistry(runtime.redis)
            session_manager.replies = ReplyRouter(runtime.target)
            session_manager.replies.start(session_manager.deliver_reply)
            runtime.sessions = session_manager
            if served:
                release_waiting_calls_on_signal(runtime.events)
            try:
                async with contextlib.AsyncExitStack() as stack:
                    if served:  # the collector's clock, with tune_collector's thresholds
                        await stack.enter_async_context(paced_collector(hush=runtime.events.hush))
                    await stack.enter_async_context(session_manager.run())
                    await stack.enter_async_context(held_openings(runtime, channel_names()))
                    yield
            finally:
                await session_manager.replies.stop()

    app = FastAPI(
        title="humangate",
        summary="A multi-channel human-functions gateway",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by gateway.docs, without a CDN
        redoc_url=None,
    )
    install_error_handlers(app)
    # A plain Route (not a Mount) so that exactly "/mcp" matches, with no trailing-slash redirect.
    mcp_endpoint = CallerAuth(
        DeliveryWatching(McpBodies(StreamableHTTPASGIApp(session_manager))), get_runtime
    )
    # No GET: a 2025-11-25 client would hold a standalone SSE stream open per session for
    # server-initiated messages, which humangate never sends (progress travels on each call's own
    # stream). The transport spec lets a server refuse it with 405, and it halves a session's memory.
    app.router.routes.append(
        Route(MCP_PATH, endpoint=mcp_endpoint, methods=sorted(MCP_METHODS), include_in_schema=False)
    )
    app.router.routes.extend(channel_routes())  # every registered channel's endpoints
    app.include_router(inbox.router)
    app.state.sign_in_provider = Provider(settings) if settings.oidc_enabled else None
    app.include_router(sign_in_router)
    app.include_router(rest.router)
    app.include_router(health.router)
    app.include_router(docs.router)
    app.include_router(home.router)
    app.add_middleware(McpEntry, endpoint=mcp_endpoint)  # the route's endpoint, reached directly
    app.add_middleware(BodySizeLimit, limits=current_limits())
    app.add_middleware(HostCheck, settings=settings)
    return app
