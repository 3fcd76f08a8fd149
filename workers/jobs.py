"""The RQ jobs of humangate. No business rules here: load, call the channel, record.

RQ calls these synchronously in a worker; each runs its async body in a fresh event loop with its
own Redis connection, so the same async store and channel clients serve gateway and workers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from redis.asyncio import Redis

from channels.base import RenderContext
from channels.registry import CHANNELS
from gateway.links import form_url
from gateway.store import HumanFunctionStore
from schemas.errors import DeliveryError, UnknownRequestError
from schemas.models import HumanFunction
from schemas.settings import Settings, get_settings

logger = logging.getLogger(__name__)


def deliver(hf_id: str) -> str:
    """Post a Human Function on its channel, once: a retried job never posts a second message."""
    return asyncio.run(_deliver(hf_id, get_settings()))


def update(hf_id: str) -> str:
    """Show an ended Human Function's outcome on its channel and disable the inputs."""
    return asyncio.run(_update(hf_id, get_settings()))


def delivery_failed(job: Any, connection: Any, exc_type: Any, value: Any, traceback: Any) -> None:
    """RQ failure callback: record why delivery failed so the waiting agent hears of it."""
    hf_id = str(job.args[0])
    message = f"delivery failed: {value}"
    logger.warning("delivery failed hf=%s: %s", hf_id, value)
    asyncio.run(_record_failure(hf_id, message, get_settings()))


def _redis(settings: Settings) -> Redis:
    if settings.redis_url is None:
        raise RuntimeError("workers need HUMANGATE_REDIS_URL")
    return Redis.from_url(settings.redis_url, socket_timeout=10)


def _context(hf: HumanFunction, settings: Settings) -> RenderContext:
    return RenderContext(form_url=form_url(settings, hf), now=time.time())


async def _load(store: HumanFunctionStore, hf_id: str) -> HumanFunction | None:
    try:
        return await store.get(hf_id)
    except UnknownRequestError:
        return None


async def _deliver(hf_id: str, settings: Settings) -> str:
    async with _redis(settings) as redis:
        store = HumanFunctionStore(redis)
        hf = await _load(store, hf_id)
        if hf is None:
            return "gone"
        if not hf.is_pending:
            return "ended before delivery"
        if hf.refs:
            return "already delivered"
        attempts = await store.count_delivery_attempt(hf_id)
        hf = hf.model_copy(update={"delivery_attempts": attempts})
        channel = CHANNELS[hf.channel]
        async with channel.connect(settings) as client:
            try:
                refs = await channel.deliver(hf, _context(hf, settings), client)
            except DeliveryError as exc:
                await store.set_delivery_error(hf_id, str(exc))
                logger.warning(
                    "delivery error hf=%s channel=%s retryable=%s", hf_id, hf.channel, exc.retryable
                )
                if exc.retryable:
                    raise
                return "failed"
            await store.set_refs(hf_id, refs)
            await store.set_delivery_error(hf_id, None)
            logger.info("delivered hf=%s channel=%s", hf_id, hf.channel)
            # It may have ended while we posted, before the refs existed for the update job.
            hf = await store.get(hf_id)
            if not hf.is_pending:
                await channel.update(hf, _context(hf, settings), client)
        return "delivered"


async def _update(hf_id: str, settings: Settings) -> str:
    async with _redis(settings) as redis:
        hf = await _load(HumanFunctionStore(redis), hf_id)
        if hf is None:
            return "gone"
        channel = CHANNELS[hf.channel]
        async with channel.connect(settings) as client:
            await channel.update(hf, _context(hf, settings), client)
        logger.info("updated hf=%s channel=%s status=%s", hf_id, hf.channel, hf.status)
        return "updated"


async def _record_failure(hf_id: str, message: str, settings: Settings) -> None:
    async with _redis(settings) as redis:
        await HumanFunctionStore(redis).set_delivery_error(hf_id, message)
