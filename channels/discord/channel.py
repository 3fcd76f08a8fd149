"""The Discord channel: a message with buttons, selects and modals, answered through Discord's
interactions endpoint (``/discord/interactions``, see ``channels.discord.inbound``) or, with
``HUMANGATE_DISCORD_INBOUND=gateway``, over a Gateway connection humangate opens
(``channels.discord.connection``).

Rendering (``channels.discord.embed``, ``channels.discord.components``, ``channels.discord.modal``) and
parsing are pure. ``verify`` checks Discord's Ed25519 signature over timestamp + body. The only I/O is
``deliver`` / ``update`` / ``check`` through ``channels.discord.rest.DiscordRest`` (discord.py's HTTP
client at ``HUMANGATE_DISCORD_API_URL``). A delivery is never posted twice: the message carries the
Human Function's id as its ``nonce`` with ``enforce_nonce``, and a retried delivery first looks for
its earlier post among the channel's latest messages.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from nacl.signing import VerifyKey

from channels.base import Desk, Endpoint, Inbound, Opening, RenderContext
from channels.discord.components import CUSTOM_ID_PREFIX
from channels.discord.embed import render_message
from channels.discord.inbound import interactions
from channels.discord.interaction import CHANNEL, identity, parse_interaction, verify_interaction
from channels.discord.rest import DiscordRest
from schemas.errors import DeliveryError
from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings

logger = logging.getLogger(__name__)

NOT_MESSAGE_CHANNELS = {4: "a category", 15: "a forum", 16: "a media channel"}
"""Discord channel types a bot cannot post a plain message in."""


class DiscordChannel:
    """Discord through a bot token (REST) and an interactions endpoint (answers)."""

    name = CHANNEL
    title = "Discord"
    posts = True
    edits = True
    client_modules: tuple[str, ...] = ()
    target_setting: str | None = "discord_channel_id"

    def endpoints(self) -> list[Endpoint]:
        return [Endpoint("/discord/interactions", ("POST",), interactions, what="an interaction")]

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> None:
        self.verify(inbound.headers, inbound.body, desk.now(), desk.settings)

    def missing_settings(self, settings: Settings) -> list[str]:
        token = settings.discord_bot_token
        over_gateway = settings.discord_inbound == "gateway"  # then nothing is signed with the key
        wanted = {
            "DISCORD_BOT_TOKEN": token is not None and token.get_secret_value().strip(),
            "DISCORD_APPLICATION_ID": settings.discord_application_id,
            "DISCORD_PUBLIC_KEY": over_gateway or settings.discord_public_key,
            "HUMANGATE_DISCORD_CHANNEL_ID": settings.discord_channel_id,
        }
        return [name for name, value in wanted.items() if not value]

    def render(self, hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
        return render_message(hf, ctx)

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        return parse_interaction(hf, payload)

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        return identity(payload)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        verify_interaction(settings.discord_public_key, headers, body, now)

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[DiscordRest]:
        token = settings.discord_bot_token.get_secret_value() if settings.discord_bot_token else ""
        rest = DiscordRest(settings.discord_api_url, token, settings.discord_channel_id or "")
        try:
            yield rest
        finally:
            await rest.close()

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        return await _earlier_post(client, hf)

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        rest: DiscordRest = client
        if hf.delivery_attempts > 1:
            earlier = await _earlier_post(rest, hf)
            if earlier is not None:
                logger.info("found the earlier post hf=%s channel=discord", hf.id)
                return earlier
        channel_id = hf.target or rest.channel_id  # a policy's target replaces the configured channel
        message = await rest.post(channel_id, render_message(hf, ctx, nonce=hf.id))
        return {
            "channel_id": str(message.get("channel_id") or channel_id),
            "message_id": str(message["id"]),
        }

    async def remind(self, hf: HumanFunction, text: str, client: Any) -> None:
        rest: DiscordRest = client
        channel_id, message_id = hf.refs.get("channel_id"), hf.refs.get("message_id")
        if not channel_id or not message_id:
            return
        reply = {
            "content": text[:2000],
            "message_reference": {"message_id": str(message_id), "fail_if_not_exists": False},
            "allowed_mentions": {"parse": []},
        }
        await rest.post(str(channel_id), reply)

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        rest: DiscordRest = client
        channel_id, message_id = hf.refs.get("channel_id"), hf.refs.get("message_id")
        if not channel_id or not message_id:
            return
        try:
            await rest.edit(str(channel_id), str(message_id), render_message(hf, ctx))
        except DeliveryError as exc:
            if exc.retryable:
                raise
            logger.warning("cannot show the outcome hf=%s channel=discord: %s", hf.id, exc)

    def openings(self, settings: Settings) -> list[Opening]:
        """One Gateway connection for the bot token, installation-wide, when interactions come over
        it (``HUMANGATE_DISCORD_INBOUND=gateway``); none when Discord calls ``/discord/interactions``."""
        if settings.discord_inbound != "gateway":
            return []
        # Imported here: the connection answers with the endpoint's handler, which uses this module.
        from channels.discord.connection import hold_gateway

        return [Opening(self.name, 1, "gateway", hold_gateway)]

    async def check(self, settings: Settings) -> list[str]:
        problems = []
        try:
            if settings.discord_public_key is not None or settings.discord_inbound == "http":
                VerifyKey(bytes.fromhex(settings.discord_public_key or ""))
        except ValueError:
            problems.append(
                "DISCORD_PUBLIC_KEY is not a 64-character hex key: copy the Public Key from the General "
                "Information page of your application in the Discord Developer Portal"
            )
        async with self.connect(settings) as rest:
            try:
                await rest.me()
                channel = await rest.channel(rest.channel_id)
                application = await rest.application() if settings.discord_inbound == "gateway" else {}
            except DeliveryError as exc:
                return [*problems, str(exc)]
        if application.get("interactions_endpoint_url"):
            problems.append(
                "the application has an Interactions Endpoint URL, so Discord sends interactions there "
                "and never over the Gateway (HUMANGATE_DISCORD_INBOUND=gateway): clear it on the General "
                "Information page of your application in the Discord Developer Portal"
            )
        kind = NOT_MESSAGE_CHANNELS.get(int(channel.get("type", 0)))
        if kind:
            problems.append(
                f"channel {rest.channel_id} is {kind}, where the bot cannot post: set "
                "HUMANGATE_DISCORD_CHANNEL_ID to a text channel"
            )
        return problems


async def _earlier_post(rest: DiscordRest, hf: HumanFunction) -> dict[str, Any] | None:
    """The references of a message an earlier attempt posted for ``hf`` (its buttons carry the id)."""
    me = await rest.me()
    prefix = f"{CUSTOM_ID_PREFIX}:{hf.id}:"
    channel_id = hf.target or rest.channel_id
    for message in await rest.recent(channel_id):
        if str((message.get("author") or {}).get("id")) != str(me.get("id")):
            continue
        ids = [
            c.get("custom_id", "")
            for row in message.get("components") or []
            for c in row.get("components") or []
        ]
        if message.get("nonce") == hf.id or any(str(i).startswith(prefix) for i in ids):
            return {
                "channel_id": str(message.get("channel_id") or channel_id),
                "message_id": str(message["id"]),
            }
    return None
