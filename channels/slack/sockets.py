"""Slack's Socket Mode: interactions read over a WebSocket humangate opens, so Slack needs no public
URL of ours (docs/slack.md).

With ``SLACK_APP_TOKEN`` set, the Slack channel opens ``HUMANGATE_SLACK_SOCKETS`` connections across
the installation, each held by one process under a lease (``gateway.openings``). Each lease gets a
new slack-bolt ``AsyncSocketModeHandler`` (aiohttp) over the process's Bolt app
(``channels.slack.bolt``): slack-sdk's ``SocketModeClient`` asks ``apps.connections.open`` (with the
app-level token, at ``HUMANGATE_SLACK_API_URL``) for a WebSocket URL, and reconnects by itself when
Slack sends ``disconnect`` (before a refresh), when the socket closes, and when pings go unanswered
(a dead network path). Slack spreads envelopes over an app's open connections, so while one
connection is alive, no click is lost.

Every envelope is dispatched to the same Bolt app as ``/slack/events`` and acknowledged with what
its listener acked. Unlike Bolt's own handler, this one acks every envelope within Slack's 3 seconds
whatever happens: a Redis call that finds Redis away is tried again within the budget
(``channels.slack.middleware.patiently``), and a listener that fails or runs out of time gets a plain
ack, with words for the person (``channels.slack.interactions.unavailable``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp, AsyncBoltRequest
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Connected, Desk, Opening
from channels.slack.actions import hf_id_of
from channels.slack.api import RESPONSE_EXCEPTIONS, delivery_error
from channels.slack.bolt import EXCHANGE, Exchange, slack_app
from channels.slack.client import API_TIMEOUT, api_base
from channels.slack.interactions import unavailable
from schemas.settings import Settings

logger = logging.getLogger(__name__)

MODE = "socket mode"
"""How Slack reaches humangate with ``SLACK_APP_TOKEN`` set, in ``humangate doctor``'s words."""

PING_INTERVAL = 5.0
"""Seconds between the client's pings; a closed socket is replaced within about this long, one whose
pongs stopped for four intervals (a dead network path) too."""

CONNECT_TIMEOUT = 15.0
"""Seconds opening a connection (``apps.connections.open`` and the WebSocket) may take; the lease
runs it again after a failure."""

CLOSE_TIMEOUT = 5.0
"""Seconds closing a connection may take when its lease is lost or the process stops."""

ENVELOPE_WINDOW_SECONDS = 300
"""How long an envelope id is remembered, so an envelope Slack sends again is acknowledged but not
applied twice."""

ACK_BUDGET = 2.5
"""Seconds an envelope's handling may take before it is acknowledged anyway (Slack waits 3 s)."""

RETRY_BUDGET = 2.2
"""Seconds within which a Redis call that found Redis away is tried again; what is left of
``ACK_BUDGET`` is for the last try and the ack."""


def socket_opening(settings: Settings) -> Opening:
    """The ``HUMANGATE_SLACK_SOCKETS`` Socket Mode connections of the installation."""
    return Opening(platform="slack", slots=settings.slack_sockets, mode=MODE, run=run_socket)


async def run_socket(held: Connected, desk: Desk) -> None:
    """Keep one Socket Mode connection open and answer what arrives, until cancelled."""
    token = desk.settings.slack_app_token
    if token is None:
        raise ValueError("SLACK_APP_TOKEN is not set, so no Socket Mode connection can be opened")
    handler = LeasedSocket(slack_app(desk), token.get_secret_value(), held, desk)
    try:
        await asyncio.wait_for(handler.connect_async(), CONNECT_TIMEOUT)  # type: ignore[no-untyped-call]
        logger.info("Slack Socket Mode connected on %s channel=slack", held.slot)
        await asyncio.Event().wait()  # the client reads, acks and reconnects in its own tasks
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(handler.close_async(), CLOSE_TIMEOUT)  # type: ignore[no-untyped-call]
        logger.info("Slack Socket Mode closed on %s channel=slack", held.slot)


class LeasedSocket(AsyncSocketModeHandler):
    """Bolt's asyncio Socket Mode handler for one lease: each envelope goes to the Bolt app with its
    ``Exchange`` (its envelope id, the retry budget) and is acknowledged within Slack's 3 seconds."""

    client: SocketModeClient

    def __init__(self, app: AsyncApp, app_token: str, held: Connected, desk: Desk) -> None:
        super().__init__(
            app, app_token, logger=logging.getLogger(f"{__name__}.client"), ping_interval=PING_INTERVAL
        )
        self.held, self.desk = held, desk

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        self.held.touch()
        reply = await self.reply(req)
        await client.send_socket_mode_response(
            SocketModeResponse(envelope_id=req.envelope_id, payload=reply or None)
        )

    async def reply(self, req: SocketModeRequest) -> dict[str, Any]:
        """What to acknowledge an envelope with (``{}``: a plain acknowledgement)."""
        payload = req.payload if isinstance(req.payload, dict) else {}
        exchange = Exchange(
            replay_key=f"envelope:{req.envelope_id}",
            replay_window=ENVELOPE_WINDOW_SECONDS,
            deadline=time.monotonic() + RETRY_BUDGET,
        )
        # Bolt's own handler mirrors an Events API retry as the HTTP header, which the middleware reads.
        headers: dict[str, str | Sequence[str]] | None = (
            {"x-slack-retry-num": str(req.retry_attempt)} if req.retry_attempt else None
        )
        request = AsyncBoltRequest(
            mode="socket_mode", body=payload, headers=headers, context={EXCHANGE: exchange}
        )
        try:
            response = await asyncio.wait_for(self.app.async_dispatch(request), ACK_BUDGET)
        except Exception as exc:  # a timeout, or Bolt itself failing: the envelope is acked all the same
            exchange.failure = exc
        if exchange.failure is not None:
            logger.warning(
                "acknowledged an envelope not handled hf=%s channel=slack (%s)",
                hf_id_of(payload),
                type(exchange.failure).__name__,
            )
            return unavailable(self.desk, payload)
        body = response.body
        if response.status != 200 or not body:
            return {}
        reply: dict[str, Any] = json.loads(body)
        return reply


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
