"""The long-lived objects of one gateway process, built in the app's lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from redis import Redis as SyncRedis
from redis.asyncio import BlockingConnectionPool, Redis

from channels.registry import CHANNELS
from gateway.callers import KeyRing
from gateway.queue import Dispatcher
from gateway.service import Clock, HumanFunctionService
from gateway.store import HumanFunctionStore
from gateway.wakeups import Wakeups
from schemas.settings import Settings

logger = logging.getLogger(__name__)

REDIS_TIMEOUT = 10.0
"""Seconds any single Redis command may take (or wait for a connection) before it fails."""

REDIS_MAX_CONNECTIONS = 64
"""Connections one gateway process opens to Redis at most; waiting calls share them (one short
HMGET per poll), so this bounds Redis's client count however many calls wait."""


@dataclass
class Runtime:
    settings: Settings
    redis: Redis
    service: HumanFunctionService
    wakeups: Wakeups
    keyring: KeyRing
    _stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    _clients: dict[str, Any] = field(default_factory=dict)
    _client_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def store(self) -> HumanFunctionStore:
        return self.service.store

    async def channel_client(self, name: str) -> Any:
        """The platform client of channel ``name`` for this process, opened on first use (webhooks
        that must call the platform within its deadline, like Slack's ``views.open``); closed when
        the runtime closes."""
        async with self._client_lock:
            if name not in self._clients:
                connect = CHANNELS[name].connect(self.settings)
                self._clients[name] = await self._stack.enter_async_context(connect)
            return self._clients[name]


@contextlib.asynccontextmanager
async def open_runtime(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Runtime]:
    """Connect to Redis, start the shared wake-up subscription and the reaper; close all on exit."""
    if settings.redis_url is None:
        raise RuntimeError("HUMANGATE_REDIS_URL is not set (humangate serve starts an embedded Redis)")
    # A blocking pool: under a burst, commands queue for a free connection (up to REDIS_TIMEOUT)
    # instead of failing with "Too many connections".
    pool = BlockingConnectionPool.from_url(
        settings.redis_url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=REDIS_TIMEOUT,
        socket_timeout=REDIS_TIMEOUT,
        socket_connect_timeout=REDIS_TIMEOUT,
    )
    redis = Redis.from_pool(pool)
    sync_redis = SyncRedis.from_url(settings.redis_url, socket_timeout=REDIS_TIMEOUT)
    store = HumanFunctionStore(redis)
    kwargs = {} if clock is None else {"clock": clock}
    service = HumanFunctionService(store, Dispatcher(sync_redis), settings, **kwargs)
    wakeups = Wakeups(redis)
    runtime = Runtime(settings, redis, service, wakeups, KeyRing(redis, settings))
    await wakeups.start()
    reaper = asyncio.create_task(_reap_forever(service), name="humangate-reaper")
    try:
        yield runtime
    finally:
        reaper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reaper
        await wakeups.stop()
        await runtime._stack.aclose()
        await redis.aclose()
        sync_redis.close()


async def _reap_forever(service: HumanFunctionService) -> None:
    """Expire overdue Human Functions nobody waits on, once per poll interval."""
    while True:
        try:
            await service.reap()
        except Exception:
            logger.exception("reaper pass failed; retrying next interval")
        await asyncio.sleep(service.settings.poll_interval)
