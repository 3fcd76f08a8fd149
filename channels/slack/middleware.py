"""The Bolt app's global middleware, in the order it runs: the signature (``SignedRequests``, Bolt's
verifier, before ``authorize``), then a body that is not an interaction refused, Slack's retries
answered once and replays applied once (``add_middleware``).

Over Socket Mode no signature is checked: the envelope came over the connection humangate opened
with the app-level token. A Redis call that fails there is tried again until the ack's budget runs
out (``patiently``): a Sentinel failover takes about 2.5 s, Slack waits 3 s for the ack.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from slack_bolt.async_app import AsyncApp, AsyncBoltContext, AsyncBoltRequest
from slack_bolt.middleware.request_verification.async_request_verification import (
    AsyncRequestVerification,
)
from slack_bolt.response import BoltResponse
from slack_sdk.signature import Clock, SignatureVerifier

from channels.base import Desk
from channels.slack.actions import hf_id_of
from channels.slack.exchange import Exchange, exchange_of
from channels.slack.interactions import RETRY_PAUSE, STORE_AWAY
from schemas.errors import InvalidRequestError, SignatureError

logger = logging.getLogger(__name__)

T = TypeVar("T")

SIGNATURE_WINDOW_SECONDS = 300
"""How old (or how far in the future) a signed Slack request may be: Slack's five minutes, which
Bolt's verifier applies; a request's signature is remembered this long against replays."""

BAD_SIGNATURE = (
    "X-Slack-Signature and X-Slack-Request-Timestamp are not a v0 signature of this body made with "
    "SLACK_SIGNING_SECRET in the last 5 minutes"
)
"""Why a request Bolt's verifier refused is refused (it does not say which part failed)."""


class _DeskClock(Clock):
    """slack-sdk's verifier clock, read from the desk's (injectable) clock."""

    def __init__(self, desk: Desk) -> None:
        self._desk = desk

    def now(self) -> float:
        return self._desk.now()


class SignedRequests(AsyncRequestVerification):
    """Bolt's request verification (its verifier, its Socket Mode exemption), refusing as Slack
    reads a refusal: a 401 through the gateway's one webhook opening, with the reason."""

    def __init__(self, signing_secret: str, desk: Desk) -> None:
        super().__init__(signing_secret, base_logger=logger)
        self._clocked = SignatureVerifier(signing_secret, clock=_DeskClock(desk))

    @property
    def verifier(self) -> SignatureVerifier:
        return self._clocked

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse:
        if req.mode == "socket_mode":
            return await next()
        timestamp = req.headers.get("x-slack-request-timestamp", [""])[0]
        signature = req.headers.get("x-slack-signature", [""])[0]
        try:
            valid = self.verifier.is_valid(req.raw_body, timestamp, signature)
        except ValueError:  # a timestamp that is not a number
            valid = False
        if valid:
            return await next()
        exchange_of(req.context).failure = SignatureError(BAD_SIGNATURE)
        return BoltResponse(status=401, body="")


def signed_requests(desk: Desk) -> SignedRequests:
    """The verification with ``desk``'s signing secret. Without one (Socket Mode alone), the webhook
    opening refuses every HTTP request before Bolt, and a random secret nobody knows stands in."""
    secret = desk.settings.slack_signing_secret
    return SignedRequests(secret.get_secret_value() if secret else secrets.token_hex(32), desk)


def add_middleware(app: AsyncApp, desk: Desk) -> None:
    """Register the global middleware that runs after the signature and ``authorize``."""

    @app.middleware
    async def refuse_what_is_not_an_interaction(
        context: AsyncBoltContext, next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        exchange = exchange_of(context)
        if exchange.refusal is not None:
            exchange.failure = InvalidRequestError(exchange.refusal)
            return BoltResponse(status=400, body="")
        await next()
        return None

    @app.middleware
    async def answer_retries_once(
        request: AsyncBoltRequest, body: dict[str, Any], next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        if "x-slack-retry-num" in request.headers:
            logger.info("acknowledged a Slack retry hf=%s channel=slack; not applied again", hf_id_of(body))
            return BoltResponse(status=200, body="")
        await next()
        return None

    @app.middleware
    async def apply_replays_once(
        context: AsyncBoltContext, body: dict[str, Any], next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        exchange = exchange_of(context)
        try:
            first = await patiently(
                exchange, lambda: desk.first_delivery(exchange.replay_key, exchange.replay_window)
            )
        except STORE_AWAY as exc:
            exchange.failure = exc
            return BoltResponse(status=200, body="")
        if not first:
            logger.warning(
                "acknowledged a replayed Slack request hf=%s channel=slack; not applied", hf_id_of(body)
            )
            return BoltResponse(status=200, body="")
        await next()
        return None


async def patiently(exchange: Exchange, call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, tried again while Redis is away and the exchange's retry budget lasts."""
    tries = 0
    while True:
        try:
            return await call()
        except STORE_AWAY as exc:
            if not exchange.retries_left():
                raise
            if not tries:
                logger.info(
                    "Redis is away (%s); trying a Slack request again channel=slack", type(exc).__name__
                )
            tries += 1
        await asyncio.sleep(RETRY_PAUSE)  # a pause between tries, bounded by the exchange's deadline
