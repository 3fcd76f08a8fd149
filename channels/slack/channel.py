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
from typing import Any

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Desk, Endpoint, Inbound, Opening, RenderContext
from channels.slack.actions import identity, parse_interaction
from channels.slack.api import (
    RESPONSE_EXCEPTIONS,
    delivery_error,
    find_earlier_post,
    is_user_id,
    target_problems,
)
from channels.slack.blocks import message_payload
from channels.slack.client import API_TIMEOUT, SlackClient, api_base, retry_handlers
from channels.slack.sockets import app_token_problems, socket_opening
from schemas.errors import SignatureError
from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings

logger = logging.getLogger(__name__)

EVENT_TYPE = "humangate_request"
"""``metadata.event_type`` of every message humangate posts; its payload carries the HF id."""


class SlackChannel:
    """Slack through slack-sdk's Web API, and interactions through one slack-bolt app
    (``channels.slack.bolt``), as signed callbacks (``channels.slack.inbound``) or over Socket Mode
    (``channels.slack.sockets``)."""

    name = "slack"
    title = "Slack"
    posts = True
    edits = True
    client_modules: tuple[str, ...] = ()
    target_setting: str | None = "slack_channel"

    def endpoints(self) -> list[Endpoint]:
        # Imported here, for the gateway alone: Bolt (the endpoint's handler) is slow to import, and
        # the workers and the commands never receive from Slack.
        from channels.slack.inbound import slack_events

        return [Endpoint("/slack/events", ("POST",), slack_events, what="a Slack request", plain_errors=True)]

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> None:
        self.verify(inbound.headers, inbound.body, desk.now(), desk.settings)

    def missing_settings(self, settings: Settings) -> list[str]:
        # Interactions arrive over Socket Mode (SLACK_APP_TOKEN) or as signed callbacks: one is enough.
        required = {
            "SLACK_BOT_TOKEN": settings.slack_bot_token,
            "SLACK_APP_TOKEN or SLACK_SIGNING_SECRET": settings.slack_app_token
            or settings.slack_signing_secret,
            "HUMANGATE_SLACK_CHANNEL": settings.slack_channel,
        }
        return [name for name, value in required.items() if not value]

    def render(self, hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
        return message_payload(hf, ctx.form_url)

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        return parse_interaction(hf, payload).model_copy(update={"person": identity(payload)})

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        return identity(payload)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        """Refuse what cannot be a signed Slack request at all; the signature itself is checked by
        Bolt's verifier in the app (``channels.slack.middleware.SignedRequests``)."""
        if settings.slack_signing_secret is None:
            raise SignatureError("SLACK_SIGNING_SECRET is not set, so no Slack request can be verified")
        try:
            body.decode()
        except UnicodeDecodeError:
            raise SignatureError("the body is not UTF-8, so it cannot be a signed Slack request") from None

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

    async def remind(self, hf: HumanFunction, text: str, client: SlackClient) -> None:
        channel, ts = hf.refs.get("channel"), hf.refs.get("ts")
        if not channel or not ts:
            return
        try:
            await client.api.chat_postMessage(
                channel=str(channel), thread_ts=str(ts), text=text, mrkdwn=False
            )
        except RESPONSE_EXCEPTIONS as exc:
            raise delivery_error(exc, str(channel), "remind in the thread") from exc

    def openings(self, settings: Settings) -> list[Opening]:
        """Socket Mode's connections with ``SLACK_APP_TOKEN``; else none (Slack calls ``/slack/events``)."""
        return [socket_opening(settings)] if settings.slack_app_token else []

    async def check(self, settings: Settings) -> list[str]:
        async with self.connect(settings) as client:
            try:
                auth = await client.api.auth_test()
            except RESPONSE_EXCEPTIONS as exc:
                return [str(delivery_error(exc, client.target, "check the token"))]
            scopes = auth.headers.get("x-oauth-scopes") if isinstance(auth.headers, Mapping) else None
            problems = await target_problems(client.api, client.target, scopes)
        return problems + await app_token_problems(settings)


__all__ = ["API_TIMEOUT", "SlackChannel", "SlackClient", "api_base", "is_user_id"]
