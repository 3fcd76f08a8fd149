"""The Slack channel: Block Kit messages and modals, signed interactions, outcomes shown in place.

Every Web API call goes through slack-sdk's ``AsyncWebClient`` at ``HUMANGATE_SLACK_API_URL``, with
an explicit timeout and slack-sdk's retry handlers for rate limits (``Retry-After``) and for
connections that never opened. Nothing that may already have reached Slack is retried inside a call;
a delivery job that is itself retried looks for its earlier post (message metadata) before posting.
Rendering and parsing live in ``slack_blocks`` / ``slack_modal`` / ``slack_actions`` and are pure.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.signature import Clock, SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import RenderContext
from channels.slack.actions import parse_interaction
from channels.slack.api import (
    RESPONSE_EXCEPTIONS,
    delivery_error,
    find_earlier_post,
    is_user_id,
    target_problems,
)
from channels.slack.blocks import message_payload
from schemas.errors import SignatureError
from schemas.models import Answer, HumanFunction
from schemas.settings import Settings

logger = logging.getLogger(__name__)

API_TIMEOUT = 10.0
"""Seconds one Slack Web API call may take, connecting included."""
RATE_LIMIT_RETRIES = 2
"""Times one call is retried after a 429, each after the ``Retry-After`` Slack asked for."""
CONNECT_RETRIES = 2
"""Times one call is retried when the connection could not even be opened (nothing was sent)."""
SIGNATURE_WINDOW_SECONDS = 300
"""How old (or how far in the future) a signed Slack request may be: Slack's five minutes."""
EVENT_TYPE = "humangate_request"
"""``metadata.event_type`` of every message humangate posts; its payload carries the HF id."""

_SIGNATURE_LENGTH = len("v0=") + 64


@dataclass(frozen=True, slots=True)
class SlackClient:
    """What ``SlackChannel.connect`` yields: the Web API client and where requests are posted."""

    api: AsyncWebClient
    target: str
    """``HUMANGATE_SLACK_CHANNEL``: a channel id, or a user id for a direct message (a request's
    policy target, ``HumanFunction.target``, replaces it)."""


class SlackChannel:
    """Slack through slack-sdk (Web API) and slack-bolt (interactivity: ``gateway.inbound.slack``)."""

    name = "slack"
    posts = True
    target_setting: str | None = "slack_channel"

    def missing_settings(self, settings: Settings) -> list[str]:
        required = {
            "SLACK_BOT_TOKEN": settings.slack_bot_token,
            "SLACK_SIGNING_SECRET": settings.slack_signing_secret,
            "HUMANGATE_SLACK_CHANNEL": settings.slack_channel,
        }
        return [name for name, value in required.items() if not value]

    def render(self, hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
        return message_payload(hf, ctx.form_url)

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        return parse_interaction(hf, payload)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        secret = settings.slack_signing_secret
        if secret is None:
            raise SignatureError("SLACK_SIGNING_SECRET is not set, so no Slack request can be verified")
        verify_signature(secret.get_secret_value(), headers, body, now)

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[SlackClient]:
        token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=API_TIMEOUT)) as session:
            api = AsyncWebClient(
                token=token,
                base_url=api_base(settings),
                timeout=int(API_TIMEOUT),
                session=session,
                retry_handlers=retry_handlers(),
            )
            yield SlackClient(api, settings.slack_channel or "")

    async def find_post(self, hf: HumanFunction, client: SlackClient) -> dict[str, Any] | None:
        return await find_earlier_post(client.api, hf.target or client.target, hf, EVENT_TYPE)

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: SlackClient) -> dict[str, Any]:
        if hf.delivery_attempts > 1:
            refs = await self.find_post(hf, client)
            if refs:
                logger.info("found the earlier post hf=%s channel=slack; not posting again", hf.id)
                return refs
        target = hf.target or client.target  # a policy's target replaces HUMANGATE_SLACK_CHANNEL
        try:
            response = await client.api.chat_postMessage(
                channel=target,
                **message_payload(hf, ctx.form_url),
                metadata={"event_type": EVENT_TYPE, "event_payload": {"hf_id": hf.id}},
                mrkdwn=False,
                unfurl_links=False,
                unfurl_media=False,
            )
        except RESPONSE_EXCEPTIONS as exc:
            raise delivery_error(exc, target, "post the request") from exc
        return {"channel": str(response["channel"]), "ts": str(response["ts"])}

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: SlackClient) -> None:
        channel, ts = hf.refs.get("channel"), hf.refs.get("ts")
        if not channel or not ts:
            return
        try:
            await client.api.chat_update(
                channel=str(channel), ts=str(ts), **message_payload(hf, ctx.form_url)
            )
        except RESPONSE_EXCEPTIONS as exc:
            error = delivery_error(exc, str(channel), "update the message")
            if error.retryable:
                raise error from exc
            logger.warning("cannot update hf=%s channel=slack: %s", hf.id, error)

    async def check(self, settings: Settings) -> list[str]:
        async with self.connect(settings) as client:
            try:
                auth = await client.api.auth_test()
            except RESPONSE_EXCEPTIONS as exc:
                return [str(delivery_error(exc, client.target, "check the token"))]
            scopes = auth.headers.get("x-oauth-scopes") if isinstance(auth.headers, Mapping) else None
            return await target_problems(client.api, client.target, scopes)


def api_base(settings: Settings) -> str:
    """``HUMANGATE_SLACK_API_URL`` with the trailing slash slack-sdk joins method names to."""
    return settings.slack_api_url.rstrip("/") + "/"


def retry_handlers() -> list[Any]:
    """Retry a call after a 429 (waiting ``Retry-After``), or when the connection never opened.

    A call that may have reached Slack (a 5xx, a dropped response) is not retried here: posting it
    again could post twice; the delivery job's own retry looks for the earlier post first.
    """
    return [
        AsyncConnectionErrorRetryHandler(
            max_retry_count=CONNECT_RETRIES, error_types=[aiohttp.ClientConnectorError]
        ),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
    ]


class _At(Clock):
    """slack-sdk's verifier clock, fixed at the caller's (injectable) ``now``."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def verify_signature(secret: str, headers: Mapping[str, str], body: bytes, now: float) -> None:
    """Raise ``SignatureError`` unless ``body`` carries Slack's v0 signature and is fresh.

    ``headers`` has lower-case names. Slack signs ``v0:{timestamp}:{raw body}`` with HMAC-SHA256 and
    the app's signing secret; a request more than five minutes from ``now`` is refused (replays of a
    fresh one are the job of ``gateway.core.replay``).
    """
    timestamp = headers.get("x-slack-request-timestamp", "").strip()
    signature = headers.get("x-slack-signature", "").strip()
    if not timestamp:
        raise SignatureError("the X-Slack-Request-Timestamp header is missing")
    if not signature:
        raise SignatureError("the X-Slack-Signature header is missing")
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise SignatureError("X-Slack-Request-Timestamp must be a Unix time in seconds")
    if abs(now - int(timestamp)) > SIGNATURE_WINDOW_SECONDS:
        raise SignatureError("X-Slack-Request-Timestamp is more than 5 minutes away from now")
    hex_part = signature[3:]
    if not signature.startswith("v0=") or len(signature) != _SIGNATURE_LENGTH or not _is_hex(hex_part):
        raise SignatureError("X-Slack-Signature must be v0= followed by 64 hex digits")
    try:
        valid = SignatureVerifier(secret, clock=_At(now)).is_valid(body, timestamp, signature)
    except UnicodeDecodeError:
        raise SignatureError("the body is not UTF-8, so it cannot be a signed Slack request") from None
    if not valid:
        raise SignatureError("X-Slack-Signature does not match the body (check SLACK_SIGNING_SECRET)")


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text.lower())


__all__ = ["SlackChannel", "SlackClient", "api_base", "is_user_id", "verify_signature"]
