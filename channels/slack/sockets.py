"""Slack's Socket Mode: interactions read over a WebSocket humangate opens, so Slack needs no public
URL of ours (docs/slack.md).

With ``SLACK_APP_TOKEN`` set, the Slack channel opens ``HUMANGATE_SLACK_SOCKETS`` connections across
the installation, each held by one process under a lease (``gateway.openings``). Each is slack-sdk's
asyncio ``SocketModeClient`` (aiohttp): it asks ``apps.connections.open`` (with the app-level token,
at ``HUMANGATE_SLACK_API_URL``) for a WebSocket URL, and reconnects by itself when Slack sends
``disconnect`` (before a refresh), when the socket closes, and when pings go unanswered (a dead
network path). Slack spreads envelopes over an app's open connections, so while one connection is
alive, no click is lost.

Every envelope is acknowledged with what ``channels.slack.interactions.respond`` returns, the code
that answers ``/slack/events`` too: a click right away (handled after its ack), a modal's submission
once handled (its ``response_action`` in the ack's payload).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Connected, Desk, Opening
from channels.slack.actions import hf_id_of
from channels.slack.api import RESPONSE_EXCEPTIONS, delivery_error
from channels.slack.client import API_TIMEOUT, api_base, retry_handlers
from channels.slack.interactions import respond
from schemas.settings import Settings

logger = logging.getLogger(__name__)

MODE = "socket mode"
"""How Slack reaches humangate with ``SLACK_APP_TOKEN`` set, in ``humangate doctor``'s words."""

PING_INTERVAL = 5.0
"""Seconds between the client's pings; a closed socket is replaced within about this long, one whose
pongs stopped for four intervals (a dead network path) too."""

CLOSE_TIMEOUT = 5.0
"""Seconds closing a connection may take when its lease is lost or the process stops."""

ENVELOPE_WINDOW_SECONDS = 300
"""How long an envelope id is remembered, so an envelope Slack sends again is acknowledged but not
applied twice."""


def socket_opening(settings: Settings) -> Opening:
    """The ``HUMANGATE_SLACK_SOCKETS`` Socket Mode connections of the installation."""
    return Opening(platform="slack", slots=settings.slack_sockets, mode=MODE, run=run_socket)


async def run_socket(held: Connected, desk: Desk) -> None:
    """Keep one Socket Mode connection open and answer what arrives, until cancelled."""
    settings = desk.settings
    if settings.slack_app_token is None:
        raise ValueError("SLACK_APP_TOKEN is not set, so no Socket Mode connection can be opened")
    web = AsyncWebClient(
        base_url=api_base(settings), timeout=int(API_TIMEOUT), retry_handlers=retry_handlers()
    )
    client = SocketModeClient(
        app_token=settings.slack_app_token.get_secret_value(),
        web_client=web,
        ping_interval=PING_INTERVAL,
        logger=logging.getLogger(f"{__name__}.client"),
    )

    async def on_request(socket: SocketModeClient, request: SocketModeRequest) -> None:
        held.touch()
        reply = await answer_envelope(desk, request)
        await socket.send_socket_mode_response(
            SocketModeResponse(envelope_id=request.envelope_id, payload=reply or None)
        )

    client.socket_mode_request_listeners.append(on_request)  # type: ignore[arg-type]
    try:
        await client.connect()  # type: ignore[no-untyped-call]
        logger.info("Slack Socket Mode connected on %s channel=slack", held.slot)
        await asyncio.Event().wait()  # the client reads, acks and reconnects in its own tasks
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.close(), CLOSE_TIMEOUT)  # type: ignore[no-untyped-call]
        logger.info("Slack Socket Mode closed on %s channel=slack", held.slot)


async def answer_envelope(desk: Desk, request: SocketModeRequest) -> dict[str, Any]:
    """What to acknowledge one envelope with: ``respond``'s reply for a new interaction, else nothing."""
    payload = request.payload
    if request.type != "interactive" or not isinstance(payload, dict):
        return {}
    if not await desk.first_delivery(f"envelope:{request.envelope_id}", ENVELOPE_WINDOW_SECONDS):
        logger.warning(
            "acknowledged an envelope sent again hf=%s channel=slack; not applied", hf_id_of(payload)
        )
        return {}
    return await respond(desk, payload)


async def app_token_problems(settings: Settings) -> list[str]:
    """What is wrong with ``SLACK_APP_TOKEN`` (``humangate doctor``): Slack must hand it a Socket Mode
    URL (``apps.connections.open``; the URL is not opened). Empty without the token."""
    if settings.slack_app_token is None:
        return []
    token = settings.slack_app_token.get_secret_value()
    if not token.startswith("xapp-"):
        return ["SLACK_APP_TOKEN must be an app-level token (xapp-...), not a bot or user token"]
    web = AsyncWebClient(base_url=api_base(settings), timeout=int(API_TIMEOUT))
    try:
        await web.apps_connections_open(app_token=token)
    except RESPONSE_EXCEPTIONS as exc:
        error = delivery_error(exc, "SLACK_APP_TOKEN", "open a Socket Mode connection")
        return [f"{error} (the app-level token needs connections:write, and Socket Mode enabled)"]
    return []
