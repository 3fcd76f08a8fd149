"""Discord's Gateway as the way interactions arrive (``HUMANGATE_DISCORD_INBOUND=gateway``, docs/discord.md):
no public URL, no ``DISCORD_PUBLIC_KEY``.

The connection is discord.py's own ``Client``: it logs in, opens the Gateway that ``GET /gateway/bot``
of ``HUMANGATE_DISCORD_API_URL`` names (``channels.discord.rest.RebasedClient``), sends IDENTIFY with
``INTENTS``, heartbeats, and after a dropped socket or a RECONNECT (op 7) resumes the session or
identifies again by itself. Each ``INTERACTION_CREATE`` is taken as the raw payload Discord sent
(discord.py's parser for that one event is replaced: it would build objects humangate never uses,
and a field it insists on, missing, would end the connection) and answered by
``channels.discord.inbound.respond``, the same handler as ``POST /discord/interactions``; its response
goes to the interaction callback instead of an HTTP body.

``hold_gateway`` runs while this process holds the ``discord:0`` lease (``gateway.openings``); when the
lease is lost it is cancelled and closes the client, so two processes are never connected at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import discord

from channels.base import Connected, Desk
from channels.discord.inbound import is_interaction, respond
from channels.discord.rest import DiscordRest, RebasedClient

logger = logging.getLogger(__name__)

INTENTS = discord.Intents(guilds=True)
"""What the Gateway session asks for: interactions arrive whatever the intents; ``guilds`` (not
privileged) only keeps discord.py's server cache consistent. No privileged intent (members,
presences, message content) is ever asked for."""

REPLAY_WINDOW = 15 * 60
"""Seconds an interaction id is remembered as handled (its token is valid for 15 minutes; a resumed
session may deliver an event again)."""

ANSWER_GRACE = 3.0
"""Seconds a closing connection lets interactions already read finish answering (Discord's limit)."""

REFUSED_PAUSE = 60.0
"""Seconds a connection Discord refused (bad token, disallowed intents) waits before giving its
lease back, so a configuration mistake is not retried every few seconds."""


class GatewayClient(discord.Client):
    """discord.py's client at the configured API base, handing every ``INTERACTION_CREATE`` payload
    to ``received`` as Discord sent it."""

    def __init__(self, base_url: str, received: Callable[[Any], None]) -> None:
        discord.VoiceClient.warn_dave = False  # humangate has no voice: not worth a warning
        super().__init__(intents=INTENTS)
        self.http = RebasedClient(base_url)
        self._connection.http = self.http
        self._connection.parsers["INTERACTION_CREATE"] = received


async def answer(desk: Desk, interaction: dict[str, Any]) -> None:
    """Handle one interaction read from the Gateway, once, and post its response to its callback."""
    interaction_id, token = str(interaction.get("id") or ""), str(interaction.get("token") or "")
    if not interaction_id or not token:
        logger.warning("an interaction without id or token channel=discord")
        return
    if not await desk.first_delivery(f"gateway:{interaction_id}", REPLAY_WINDOW):
        logger.info("interaction %s delivered again, not applied again channel=discord", interaction_id)
        return
    reply = await respond(desk, interaction)
    rest: DiscordRest = await desk.client()
    await rest.callback(interaction_id, token, reply)


async def hold_gateway(held: Connected, desk: Desk) -> None:
    """Keep one Gateway connection open (reconnecting after drops) and answer what arrives over it,
    until cancelled."""
    settings = desk.settings
    token = settings.discord_bot_token.get_secret_value() if settings.discord_bot_token else ""
    answering: set[asyncio.Task[None]] = set()

    async def handle(interaction: dict[str, Any]) -> None:
        try:
            await answer(desk, interaction)
        except Exception:  # one interaction's failure must not end the connection
            logger.exception("cannot answer interaction %s channel=discord", interaction.get("id"))

    def received(data: Any) -> None:
        held.touch()
        if not is_interaction(data):
            logger.warning("INTERACTION_CREATE without an interaction channel=discord")
            return
        task = asyncio.create_task(handle(data), name=f"humangate-discord-interaction-{data.get('id')}")
        answering.add(task)
        task.add_done_callback(answering.discard)

    client = GatewayClient(settings.discord_api_url, received)
    logger.info("connecting to the Discord Gateway slot=%s channel=discord", held.slot)
    try:
        await client.start(token, reconnect=True)
    except (discord.LoginFailure, discord.PrivilegedIntentsRequired, discord.ConnectionClosed) as exc:
        logger.error(
            "Discord refused the Gateway connection channel=discord: %s. Check DISCORD_BOT_TOKEN "
            "(the Bot page of your application in the Discord Developer Portal)",
            type(exc).__name__,
        )
        await client.close()
        await asyncio.sleep(REFUSED_PAUSE)
    finally:
        await client.close()
        logger.info("closed the Discord Gateway connection slot=%s channel=discord", held.slot)
        if answering:
            await asyncio.wait(set(answering), timeout=ANSWER_GRACE)
            for task in set(answering):
                task.cancel()
