"""Bolt's asyncio Socket Mode handler under one lease (``channels.slack.sockets``): each envelope goes
to the process's Bolt app with its ``Exchange`` and is acknowledged within Slack's 3 seconds, even
when its listener fails, runs out of time, or finds Redis away for the whole budget (then with
words for the person, ``channels.slack.interactions.unavailable``).

Imported only by a process that holds a connection: Bolt is slow to import.
"""

from __future__ import annotations

import asyncio
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

from channels.base import Connected, Desk
from channels.slack.actions import hf_id_of
from channels.slack.exchange import EXCHANGE, Exchange
from channels.slack.interactions import unavailable

logger = logging.getLogger(__name__)

PING_INTERVAL = 5.0
"""Seconds between the client's pings; a closed socket is replaced within about this long, one whose
pongs stopped for four intervals (a dead network path) too."""

ENVELOPE_WINDOW_SECONDS = 300
"""How long an envelope id is remembered, so an envelope Slack sends again is acknowledged but not
applied twice."""

ACK_BUDGET = 2.7
"""Seconds an envelope's handling may take before it is acknowledged anyway (Slack waits 3 s)."""

RETRY_BUDGET = 2.4
"""Seconds within which a Redis call that found Redis away is tried again; what is left of
``ACK_BUDGET`` is for the last try and the ack."""


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
        try:
            request = AsyncBoltRequest(
                mode="socket_mode", body=payload, headers=headers, context={EXCHANGE: exchange}
            )
            response = await asyncio.wait_for(self.app.async_dispatch(request), ACK_BUDGET)
        except Exception as exc:  # a timeout, or Bolt itself failing: the envelope is acked all the same
            exchange.failure = exc
        else:
            if response.status >= 500 and exchange.failure is None:  # Bolt caught a middleware's error
                exchange.failure = RuntimeError(f"the Bolt app answered {response.status}")
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
