"""Discord's REST API through discord.py's own ``HTTPClient``, aimed at ``HUMANGATE_DISCORD_API_URL``.

discord.py's client brings what Discord asks of bots: ``Authorization: Bot <token>``, per-route
rate-limit buckets, waiting out a 429 for its ``retry_after`` (up to ``MAX_RATE_LIMIT_WAIT``, then
``RateLimited``), the global limit, and retries of 500/502/504. Its routes are built on the class-wide
``Route.BASE``; ``RebasedClient`` moves each request (and the Gateway connection, see
``channels.discord.connection``) to the configured base instead, so nothing global is changed and
tests point the real client at a fake API.

Every call has a deadline (``CALL_TIMEOUT``) and turns failures into ``DeliveryError``: retryable for
rate limits, 5xx and network trouble, not retryable (with what to fix, in plain words) for a refused
token, a missing channel or missing permissions. Interaction tokens travel in webhook URLs, so the
``discord.http`` log records are redacted.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import aiohttp
import discord
from discord.gateway import DiscordWebSocket
from discord.http import HTTPClient, MultipartParameters, Route

from schemas.errors import DeliveryError

logger = logging.getLogger(__name__)

MAX_RATE_LIMIT_WAIT = 30.0
"""Longest 429 ``retry_after`` waited out in place (discord.py's minimum); longer ones fail retryably."""

CALL_TIMEOUT = 45.0
"""Seconds one REST operation may take, rate-limit waits and discord.py's own retries included."""

RECENT_MESSAGES = 50
"""How many of the channel's latest messages a retried delivery looks through for its earlier post."""

_WEBHOOK_TOKEN = re.compile(r"(/(?:webhooks|interactions)/\d+/)[^/\s?]+")
_live_tokens: set[str] = set()
"""Interaction tokens in use by a webhook call right now; discord.py logs them in rate-limit lines."""


class _RedactWebhookTokens(logging.Filter):
    """Interaction tokens are secrets for 15 minutes: discord.py logs URLs and bucket keys, so hide them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = _redact(record.msg)
        return True


def _redact(text: str) -> str:
    text = _WEBHOOK_TOKEN.sub(r"\1<redacted>", text)
    for token in list(_live_tokens):
        text = text.replace(token, "<redacted>")
    return text


logging.getLogger("discord.http").addFilter(_RedactWebhookTokens())


NO_MENTIONS: dict[str, Any] = {"parse": []}
"""``allowed_mentions`` of every message humangate sends: nothing in its text notifies anyone; a
step's mentions name their users and roles explicitly (``channels.mentions.discord_mentions``)."""

MESSAGE_RESPONSES = frozenset({4, 7})
"""Interaction response types whose ``data`` is a message (channel message, update message)."""


def quiet(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with ``allowed_mentions`` set (``NO_MENTIONS`` unless it names its own)."""
    return message if "allowed_mentions" in message else {**message, "allowed_mentions": NO_MENTIONS}


def quiet_response(response: dict[str, Any]) -> dict[str, Any]:
    """An interaction response whose message (if it carries one) has ``allowed_mentions`` set."""
    data = response.get("data")
    if response.get("type") in MESSAGE_RESPONSES and isinstance(data, dict):
        return {**response, "data": quiet(data)}
    return response


class RebasedClient(HTTPClient):
    """discord.py's HTTP client sending every route to ``base_url`` instead of ``Route.BASE``, and
    opening the Gateway at the URL that base's ``GET /gateway/bot`` names instead of discord.py's
    built-in ``DiscordWebSocket.DEFAULT_GATEWAY`` (Discord names that same address; a test's fake
    API names its own)."""

    def __init__(self, base_url: str) -> None:
        super().__init__(asyncio.get_running_loop(), max_ratelimit_timeout=MAX_RATE_LIMIT_WAIT)
        self.base_url = base_url.rstrip("/")
        self._gateway_url: str | None = None

    async def request(self, route: Route, **kwargs: Any) -> Any:
        if route.url.startswith(Route.BASE):
            route.url = self.base_url + route.url[len(Route.BASE) :]
        return await super().request(route, **kwargs)

    async def ws_connect(self, url: str, *, compress: int = 0) -> aiohttp.ClientWebSocketResponse:
        default = str(DiscordWebSocket.DEFAULT_GATEWAY).rstrip("/")
        if url.startswith(default):
            if self._gateway_url is None:
                _, found, _ = await self.get_bot_gateway()
                self._gateway_url = found.rstrip("/")
            url = self._gateway_url + url[len(default) :]
        return await super().ws_connect(url, compress=compress)


class DiscordRest:
    """The calls humangate makes to Discord with one bot token at one API base; the token is checked
    (``GET /users/@me``, discord.py's log in) on first use."""

    def __init__(self, base_url: str, token: str, channel_id: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.channel_id = channel_id
        """``HUMANGATE_DISCORD_CHANNEL_ID``: where requests are posted."""
        self._token = token
        self._http = RebasedClient(self.base_url)
        self._me: dict[str, Any] | None = None
        self._login_lock = asyncio.Lock()

    async def close(self) -> None:
        await self._http.close()

    async def me(self) -> dict[str, Any]:
        """The bot's own user (``GET /users/@me``): checks the token, once per client."""
        async with self._login_lock:
            if self._me is None:
                try:
                    self._me = await self._call(
                        "checking the bot token", self._http.static_login(self._token)
                    )
                except DeliveryError:
                    await self._http.close()  # log in opens a session; the next try opens another
                    raise
            return self._me

    async def application(self) -> dict[str, Any]:
        """The bot's application (``GET /oauth2/applications/@me``)."""
        await self.me()
        data: dict[str, Any] = await self._call("reading the application", self._http.application_info())
        return data

    async def channel(self, channel_id: str) -> dict[str, Any]:
        await self.me()
        data: dict[str, Any] = await self._call(
            f"reading channel {channel_id}", self._http.get_channel(channel_id), channel_id
        )
        return data

    async def post(self, channel_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Create a message (with its ``nonce`` and ``enforce_nonce``, Discord returns an earlier one)."""
        await self.me()
        params = MultipartParameters(payload=quiet(payload), multipart=None, files=None)
        return dict(
            await self._call(
                f"posting in channel {channel_id}",
                self._http.send_message(channel_id, params=params),
                channel_id,
            )
        )

    async def edit(self, channel_id: str, message_id: str, payload: dict[str, Any]) -> None:
        await self.me()
        params = MultipartParameters(payload=quiet(payload), multipart=None, files=None)
        await self._call(
            f"editing message {message_id} in channel {channel_id}",
            self._http.edit_message(channel_id, message_id, params=params),
            channel_id,
        )

    async def recent(self, channel_id: str) -> list[dict[str, Any]]:
        """The channel's latest messages, newest first."""
        await self.me()
        messages: list[dict[str, Any]] = await self._call(
            f"reading recent messages of channel {channel_id}",
            self._http.logs_from(channel_id, RECENT_MESSAGES),
            channel_id,
        )
        return messages

    async def followup(self, application_id: str, token: str, payload: dict[str, Any]) -> None:
        """Send a message about an interaction that was answered late (needs no bot token)."""
        await self.me()
        route = Route(
            "POST", "/webhooks/{webhook_id}/{webhook_token}", webhook_id=application_id, webhook_token=token
        )
        await self._webhook(
            "sending a follow-up message", token, self._http.request(route, json=quiet(payload))
        )

    async def edit_original(self, application_id: str, token: str, payload: dict[str, Any]) -> None:
        """Edit the message an interaction was deferred on."""
        await self.me()
        route = Route(
            "PATCH",
            "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
            webhook_id=application_id,
            webhook_token=token,
        )
        await self._webhook(
            "editing the original message", token, self._http.request(route, json=quiet(payload))
        )

    async def callback(self, interaction_id: str, token: str, payload: dict[str, Any]) -> None:
        """Answer an interaction read from the Gateway (what an HTTP interaction's response body
        says), within Discord's 3 seconds; needs no bot token."""
        await self.me()
        route = Route(
            "POST",
            "/interactions/{interaction_id}/{interaction_token}/callback",
            interaction_id=interaction_id,
            interaction_token=token,
        )
        request = self._http.request(route, json=quiet_response(payload))
        await self._webhook("answering an interaction", token, request)

    async def _webhook(self, what: str, token: str, request: Any) -> None:
        _live_tokens.add(token)
        try:
            await self._call(what, request)
        finally:
            _live_tokens.discard(token)

    async def _call(self, what: str, request: Any, channel_id: str = "") -> Any:
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                return await request
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise failure(exc, what, channel_id, self.base_url) from exc


def failure(exc: BaseException, what: str, channel_id: str, base_url: str) -> DeliveryError:
    """A ``DeliveryError`` saying in plain words what went wrong and, when a person must act, what to do."""
    where = f"channel {channel_id}" if channel_id else "the channel"
    if isinstance(exc, discord.LoginFailure) or (
        isinstance(exc, discord.HTTPException) and exc.status == 401
    ):
        return DeliveryError(
            f"{what}: Discord refused the bot token (401 Unauthorized). Set DISCORD_BOT_TOKEN to the token "
            "on the Bot page of your application in the Discord Developer Portal",
            retryable=False,
        )
    if isinstance(exc, discord.RateLimited):
        return DeliveryError(
            f"{what}: Discord is rate limiting the bot for {exc.retry_after:.0f} seconds",
            retryable=True,
        )
    if isinstance(exc, discord.HTTPException):
        code, status = exc.code, exc.status
        if status >= 500:
            return DeliveryError(f"{what}: Discord answered {status}", retryable=True)
        if status == 429:
            return DeliveryError(f"{what}: Discord answered 429 Too Many Requests", retryable=True)
        if code == 50001:
            advice = (
                f"the bot cannot see {where} (Missing Access): invite it to the server and let it view "
                f"{where}"
            )
        elif code == 50013:
            advice = (
                f"the bot lacks permissions in {where} (Missing Permissions): allow it View Channel, "
                "Send Messages, Embed Links and Read Message History there"
            )
        elif code == 10003:
            advice = f"{where} does not exist (Unknown Channel): check HUMANGATE_DISCORD_CHANNEL_ID"
        elif code == 10008:
            advice = "the message was deleted (Unknown Message)"
        else:
            advice = f"Discord answered {status} ({exc.text or 'no details'})"
        return DeliveryError(f"{what}: {advice}", retryable=False)
    if isinstance(exc, TimeoutError):
        return DeliveryError(
            f"{what}: Discord did not answer within {CALL_TIMEOUT:.0f} seconds", retryable=True
        )
    return DeliveryError(f"{what}: cannot reach Discord at {base_url} ({type(exc).__name__})", retryable=True)
