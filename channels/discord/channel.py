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

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from channels.base import Desk, Endpoint, Inbound, Opening, RenderContext
from channels.discord.components import CUSTOM_ID_PREFIX, Act, parse_custom_id
from channels.discord.embed import render_message
from channels.discord.modal import option_values, submitted_reason, submitted_values
from channels.discord.rest import DiscordRest
from channels.display import approval_field
from schemas.answers import coerce_text_values
from schemas.errors import DeliveryError, InvalidAnswerError, SignatureError
from schemas.flat import options_of
from schemas.models import Action, Answer, HumanFunction, Person
from schemas.settings import Settings

logger = logging.getLogger(__name__)

SIGNATURE_MAX_AGE = 300
"""Seconds an interaction's signature timestamp may be from now, either way, before it is refused."""

NOT_MESSAGE_CHANNELS = {4: "a category", 15: "a forum", 16: "a media channel"}
"""Discord channel types a bot cannot post a plain message in."""


class DiscordChannel:
    """Discord through a bot token (REST) and an interactions endpoint (answers)."""

    name = "discord"
    title = "Discord"
    posts = True
    edits = True
    target_setting: str | None = "discord_channel_id"

    def endpoints(self) -> list[Endpoint]:
        # Imported here: the endpoint's handler uses this module's parsing.
        from channels.discord.inbound import interactions

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


def verify_interaction(public_key: str | None, headers: Mapping[str, str], body: bytes, now: float) -> None:
    """Raise ``SignatureError`` unless ``body`` is signed as Discord signs interactions and is fresh.

    Discord signs ``X-Signature-Timestamp + body`` with Ed25519 and sends the signature in hex in
    ``X-Signature-Ed25519``. ``headers`` has lower-case names.
    """
    signature, stamp = headers.get("x-signature-ed25519"), headers.get("x-signature-timestamp")
    if not public_key:
        raise SignatureError(
            "DISCORD_PUBLIC_KEY is not set, so no interaction is accepted here (interactions come "
            "over the Gateway: HUMANGATE_DISCORD_INBOUND=gateway)"
        )
    if not signature or not stamp:
        raise SignatureError("missing X-Signature-Ed25519 or X-Signature-Timestamp header")
    try:
        key = VerifyKey(bytes.fromhex(public_key or ""))
    except ValueError:
        raise SignatureError("DISCORD_PUBLIC_KEY is not a valid Ed25519 public key") from None
    try:
        raw = bytes.fromhex(signature)
        seconds = int(stamp)
    except ValueError:
        raise SignatureError("the signature or its timestamp is malformed") from None
    if len(raw) != 64:
        raise SignatureError("the signature is malformed (not 64 bytes)")
    try:
        key.verify(stamp.encode() + body, raw)
    except BadSignatureError:
        raise SignatureError("the signature does not match DISCORD_PUBLIC_KEY") from None
    if abs(now - seconds) > SIGNATURE_MAX_AGE:
        raise SignatureError(f"the signature timestamp is more than {SIGNATURE_MAX_AGE} seconds from now")


def person(interaction: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """(user id, the name people see, role ids) of whoever clicked; roles only in a server."""
    member = interaction.get("member") if isinstance(interaction.get("member"), Mapping) else None
    user = (member or {}).get("user") or interaction.get("user") or {}
    user_id = str(user.get("id", ""))
    name = (member or {}).get("nick") or user.get("global_name") or user.get("username") or "someone"
    roles = [str(role) for role in (member or {}).get("roles") or []]
    return user_id, str(name), roles


def identity(interaction: Mapping[str, Any]) -> Person | None:
    """Who clicked, as Discord's signed interaction names them; ``None`` if it names no user."""
    user_id, name, _ = person(interaction)
    return Person(channel=DiscordChannel.name, id=user_id, name=name) if user_id else None


def held(interaction: Mapping[str, Any]) -> list[str]:
    """What the clicker holds, as policies name approvers: ``discord:user:<id>`` and a
    ``discord:role:<id>`` for each of their roles in the server (docs/policies.md#approvers)."""
    user_id, _, roles = person(interaction)
    names = [f"discord:user:{user_id}"] if user_id else []
    return names + [f"discord:role:{role}" for role in roles]


def answered_by(interaction: Mapping[str, Any]) -> str:
    """``Ada (111111111111111111)``: the name people see and the stable user id."""
    user_id, name, _ = person(interaction)
    return f"{name} ({user_id})"


def is_allowed(interaction: Mapping[str, Any], settings: Settings) -> bool:
    """Anyone may answer unless allowed users or roles are set; then one of them must match."""
    users, roles = set(settings.discord_allowed_users), set(settings.discord_allowed_roles)
    if not users and not roles:
        return True
    user_id, _, member_roles = person(interaction)
    return user_id in users or bool(roles.intersection(member_roles))


def parse_interaction(hf: HumanFunction, interaction: Mapping[str, Any]) -> Answer:
    """The answer a click or a modal submit gives, with who gave it (``identity``);
    ``InvalidAnswerError`` when it gives none."""
    return _parse(hf, interaction).model_copy(update={"person": identity(interaction)})


def _parse(hf: HumanFunction, interaction: Mapping[str, Any]) -> Answer:
    data: Mapping[str, Any] = interaction.get("data") or {}
    try:
        custom_id = parse_custom_id(str(data.get("custom_id", "")))
    except ValueError:
        raise InvalidAnswerError({"": "this component is not one of humangate's"}) from None
    by = answered_by(interaction)
    schema = hf.request_schema
    if custom_id.act is Act.APPROVE and (field := approval_field(schema)):
        return Answer(action=Action.ACCEPT, content={field: True}, by=by, via=DiscordChannel.name)
    if custom_id.act is Act.CANCEL:
        return Answer(action=Action.CANCEL, by=by, via=DiscordChannel.name)
    if custom_id.act is Act.REASON:
        return Answer(action=Action.DECLINE, reason=submitted_reason(data), by=by, via=DiscordChannel.name)
    if custom_id.act in (Act.PICK, Act.CHOOSE) and len(schema.get("properties") or {}) == 1:
        name, prop = next(iter(schema["properties"].items()))
        raw = [str(custom_id.arg)] if custom_id.act is Act.PICK else data.get("values")
        chosen = option_values(options_of(prop), [str(v) for v in raw] if isinstance(raw, list) else [])
        if not chosen:
            raise InvalidAnswerError(
                {name: "must be one of: " + ", ".join(o.value for o in options_of(prop))}
            )
        return form_answer(hf, {name: chosen}, by)
    if custom_id.act is Act.FORM:
        return form_answer(hf, submitted_values(hf, data), by)
    raise InvalidAnswerError({"": "this button opens a form; it does not answer by itself"})


def form_answer(hf: HumanFunction, values: Mapping[str, list[str]], by: str) -> Answer:
    """Accept with the typed ``values`` (an approval's boolean set: its form is "Approve with details")."""
    content = coerce_text_values(hf.request_schema, values)
    field = approval_field(hf.request_schema)
    if field:
        content[field] = True
    return Answer(action=Action.ACCEPT, content=content, by=by, via=DiscordChannel.name)
