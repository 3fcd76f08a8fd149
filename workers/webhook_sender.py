"""The webhook sender of a worker process: signs and sends queued events (docs/webhooks.md).

One asyncio loop (uvloop) in a thread of the worker, with one ``aiohttp.ClientSession``, sends up
to ``CONCURRENCY`` deliveries at once: a burst of events leaves within a poll interval, with no job or
process per delivery. Deliveries are claimed from Redis (``gateway.core.webhook_store``), so any
number of worker processes share them, none is sent by two at once, and a killed worker's due
retries are sent by whichever sender runs next.

A 2xx answer ends a delivery; 410 marks it gone; anything else (or no answer) is retried after the
next delay of ``HUMANGATE_WEBHOOK_RETRY_SCHEDULE``, and after the last one it is marked failed. An
address webhooks may not reach fails it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import urlsplit

import aiohttp
import uvloop
from standardwebhooks import Webhook as Signer

from gateway.core.metrics import WEBHOOK_DELIVERIES, count
from gateway.core.outbound import RefusedAddressError, refused_literal, webhook_session
from gateway.core.policies import load_policies
from gateway.core.redis_client import async_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.webhook_store import Delivery, State, WebhookStore
from schemas.settings import Settings
from schemas.webhooks import Webhook

logger = logging.getLogger(__name__)

CONCURRENCY = 200
"""Deliveries one sender has in flight at most."""

CLAIM_BATCH = 100
"""Deliveries claimed in one round trip at most."""

POLL_INTERVAL = 0.1
"""Seconds between two looks for due deliveries while there is room and nothing was due."""

SEND_TIMEOUT = 10.0
"""Seconds one attempt may take (connect, send, answer); far below the claim lease."""

STOP_GRACE = 15.0
"""Seconds a stopping sender gives its deliveries in flight (the rest are claimed again later)."""

USER_AGENT = "humangate-webhooks/1"


class WebhookSender:
    """Sends the deliveries of the webhooks ``hooks`` from a thread of its own."""

    def __init__(
        self,
        target: RedisTarget,
        hooks: tuple[Webhook, ...],
        settings: Settings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.target = target
        self.hooks = {hook.url: hook for hook in hooks}
        self.signers = {hook.url: Signer(hook.secret.get_secret_value()) for hook in hooks}
        self.settings = settings
        self.clock = clock
        self._name = secrets.token_hex(4)
        self._claims = 0
        self._failing = False
        self._loop = uvloop.new_event_loop()
        self._stopping = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="humangate-webhooks", daemon=True)

    def start(self) -> None:
        self._thread.start()
        logger.info("webhook sender for %d URL(s)", len(self.hooks))

    def stop(self) -> None:
        """Stop after the deliveries in flight (at most ``STOP_GRACE`` seconds)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(STOP_GRACE + 5)

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self.run())
        finally:
            self._loop.close()

    async def run(self) -> None:
        """Claim and send due deliveries until asked to stop."""
        redis = async_redis(self.target)
        store = WebhookStore(redis, self.settings.webhook_retry_schedule)
        in_flight: set[asyncio.Task[None]] = set()
        client = webhook_session(self.settings.webhook_allow_private, CONCURRENCY, SEND_TIMEOUT)
        try:
            while not self._stopping.is_set():
                claimed = await self._claim(store, CONCURRENCY - len(in_flight))
                for delivery, body, token in claimed:
                    task = asyncio.create_task(self.deliver(client, store, delivery, body, token))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
                if not claimed or len(in_flight) >= CONCURRENCY:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), POLL_INTERVAL)
            if in_flight:
                await asyncio.wait(in_flight, timeout=STOP_GRACE)
        finally:
            for task in in_flight:
                task.cancel()
            await client.close()
            await redis.aclose()

    async def _claim(self, store: WebhookStore, room: int) -> list[tuple[Delivery, str | None, str]]:
        if room <= 0:
            return []
        self._claims += 1
        token = f"{self._name}:{self._claims}"
        try:
            claimed = await store.claim(self.clock(), min(room, CLAIM_BATCH), token)
        except Exception as exc:
            if not self._failing:  # once per outage, not once per poll
                logger.warning("webhook sender: could not claim deliveries (%s); retrying", exc)
            self._failing = True
            return []
        if self._failing:
            logger.info("webhook sender: Redis answers again")
        self._failing = False
        return [(delivery, body, token) for delivery, body in claimed]

    async def deliver(
        self,
        client: aiohttp.ClientSession,
        store: WebhookStore,
        delivery: Delivery,
        body: str | None,
        token: str,
    ) -> None:
        """One attempt of one claimed delivery, recorded (a failure to record leaves the claim to
        lapse: the attempt is then made again)."""
        delivery_id = delivery.id
        try:
            state, error, code = await self._attempt(client, delivery, body)
            recorded, state = await store.settle(delivery, token, state, self.clock(), error, code)
        except Exception:
            logger.exception("webhook delivery %s: attempt not recorded; it is made again later", delivery_id)
            return
        if recorded:
            await _count(store, "retrying" if state == State.PENDING else state)
            log = logger.info if state in (State.DELIVERED, State.PENDING) else logger.warning
            log(
                "webhook %s delivery=%s to %s: %s%s",
                delivery.type,
                delivery_id,
                urlsplit(delivery.url).netloc,
                state,
                f" ({error})" if error else "",
            )

    async def _attempt(
        self, client: aiohttp.ClientSession, delivery: Delivery, body: str | None
    ) -> tuple[str, str, str]:
        """(state, error, HTTP status) after one attempt."""
        signer = self.signers.get(delivery.url)
        if signer is None:
            return State.FAILED, "this URL is no longer a webhook of the policy file", ""
        if body is None:
            return State.FAILED, "the event's body has expired", ""
        now = self.clock()
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "webhook-id": delivery.event,
            "webhook-timestamp": str(int(now)),
            "webhook-signature": signer.sign(delivery.event, datetime.fromtimestamp(now, UTC), body),
        }
        refused = None if self.settings.webhook_allow_private else refused_literal(delivery.url)
        if refused is not None:
            return State.FAILED, refused, ""
        try:
            async with client.post(
                delivery.url, data=body.encode(), headers=headers, allow_redirects=False
            ) as response:
                status = response.status
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, RefusedAddressError):
                return State.FAILED, str(exc.os_error), ""
            return State.PENDING, f"cannot connect: {exc.os_error}", ""
        except (aiohttp.ClientError, TimeoutError) as exc:
            return State.PENDING, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, ""
        code = str(status)
        if 200 <= status < 300:
            return State.DELIVERED, "", code
        if status == 410:
            return State.GONE, "the receiver answered 410 Gone", code
        return State.PENDING, f"HTTP {code}", code


def start_webhook_sender(settings: Settings, target: RedisTarget) -> WebhookSender | None:
    """Start this worker's webhook sender when the policy file has webhooks (else ``None``)."""
    hooks = load_policies(settings).webhooks
    if not hooks:
        return None
    sender = WebhookSender(target, hooks, settings)
    sender.start()
    return sender


async def _count(store: WebhookStore, result: str) -> None:
    """Count one attempt in ``humangate_webhook_deliveries_total{result}`` (shared by every process;
    a count lost while Redis is away does not fail the delivery)."""
    try:
        await count(store.redis, WEBHOOK_DELIVERIES, result)
    except Exception as exc:
        logger.info("webhook delivery not counted (%s: %s)", type(exc).__name__, exc)
