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
import logging

from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Connected, Desk, Opening
from channels.slack.api import RESPONSE_EXCEPTIONS, delivery_error
from channels.slack.client import API_TIMEOUT, api_base
from schemas.settings import Settings

logger = logging.getLogger(__name__)

MODE = "socket mode"
"""How Slack reaches humangate with ``SLACK_APP_TOKEN`` set, in ``humangate doctor``'s words."""

CONNECT_TIMEOUT = 15.0
"""Seconds opening a connection (``apps.connections.open`` and the WebSocket) may take; the lease
runs it again after a failure."""

CLOSE_TIMEOUT = 5.0
"""Seconds closing a connection may take when its lease is lost or the process stops."""


def socket_opening(settings: Settings) -> Opening:
    """The ``HUMANGATE_SLACK_SOCKETS`` Socket Mode connections of the installation."""
    return Opening(platform="slack", slots=settings.slack_sockets, mode=MODE, run=run_socket)


async def run_socket(held: Connected, desk: Desk) -> None:
    """Keep one Socket Mode connection open and answer what arrives, until cancelled."""
    token = desk.settings.slack_app_token
    if token is None:
        raise ValueError("SLACK_APP_TOKEN is not set, so no Socket Mode connection can be opened")
    # Imported here, by a process that holds a connection: Bolt is slow to import.
    from channels.slack.bolt import slack_app
    from channels.slack.socket_handler import LeasedSocket

    handler = LeasedSocket(slack_app(desk), token.get_secret_value(), held, desk)
    try:
        await asyncio.wait_for(handler.connect_async(), CONNECT_TIMEOUT)  # type: ignore[no-untyped-call]
        logger.info("Slack Socket Mode connected on %s channel=slack", held.slot)
        await asyncio.Event().wait()  # the client reads, acks and reconnects in its own tasks
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(handler.close_async(), CLOSE_TIMEOUT)  # type: ignore[no-untyped-call]
        logger.info("Slack Socket Mode closed on %s channel=slack", held.slot)


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
