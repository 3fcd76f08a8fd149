"""Mounting every registered channel's endpoints, behind the one webhook opening.

For each ``Endpoint`` of each channel in ``channels.registry``, a route. A signed endpoint is opened
here, the same way for every platform: a channel not configured on this gateway is refused (404,
naming the missing settings), the body is read (its size was already bounded by ``gateway.limits``),
``Channel.verify_inbound`` must pass (else 401, as for a ``SignatureError`` the handler raises when
its platform's SDK verifies the request), and an ``InvalidRequestError`` the handler raises is a 400;
every refusal is built by ``gateway.errors.webhook_refusal``. The handler gets the opened
request and the channel's ``Desk`` (``gateway.desk``), built once per app.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from channels.base import Channel, Endpoint, Inbound
from channels.registry import endpoints
from gateway.desk import RuntimeDesk
from gateway.errors import webhook_refusal
from gateway.runtime import Runtime
from schemas.errors import InvalidRequestError, NotConfiguredError, SignatureError

logger = logging.getLogger(__name__)


def channel_routes() -> list[Route]:
    """One route per endpoint of every registered channel."""
    return [
        Route(
            endpoint.path, _route(channel, endpoint), methods=list(endpoint.methods), include_in_schema=False
        )
        for channel, endpoint in endpoints()
    ]


def desk_of(request: Request, channel: Channel) -> RuntimeDesk:
    """The desk of ``channel`` in this app, built on first use."""
    runtime: Runtime = request.app.state.runtime
    desks: dict[str, RuntimeDesk] | None = getattr(request.app.state, "channel_desks", None)
    if desks is None:
        desks = request.app.state.channel_desks = {}
    desk = desks.get(channel.name)
    if desk is None or desk.runtime is not runtime:  # a new lifespan has a new runtime
        desk = desks[channel.name] = RuntimeDesk(runtime, channel.name)
    return desk


def _route(channel: Channel, endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    async def route(request: Request) -> Response:
        desk = desk_of(request, channel)
        headers = {name.lower(): value for name, value in request.headers.items()}
        if not endpoint.signed:
            return await endpoint.handle(request, Inbound(headers, b""), desk)
        return await _open(request, channel, endpoint, desk, headers)

    return route


async def _open(
    request: Request, channel: Channel, endpoint: Endpoint, desk: RuntimeDesk, headers: dict[str, str]
) -> Response:
    missing = channel.missing_settings(desk.settings)
    if missing:
        error = NotConfiguredError(
            f"{channel.title} is not configured on this gateway: set {', '.join(missing)}"
        )
        return webhook_refusal(error, plain=endpoint.plain_errors)
    inbound = Inbound(headers, await request.body())
    try:
        proof = await channel.verify_inbound(inbound, desk)
        return await endpoint.handle(request, Inbound(headers, inbound.body, proof), desk)
    except SignatureError as exc:  # from verify_inbound, or a handler whose platform SDK verifies (Bolt)
        logger.warning("refused %s channel=%s: %s", endpoint.what, channel.name, exc)
        return webhook_refusal(exc, plain=endpoint.plain_errors)
    except InvalidRequestError as exc:
        return webhook_refusal(exc, plain=endpoint.plain_errors)
