"""The long-lived objects of one gateway process, built in the app's lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from channels.registry import CHANNELS
from gateway.core.audit import audit_settings
from gateway.core.callers import KeyRing
from gateway.core.events import Events
from gateway.core.policies import load_policies
from gateway.core.queue import JobRecorder
from gateway.core.reaper import reap_forever
from gateway.core.redis_client import async_redis
from gateway.core.redis_target import RedisNotConfigured, RedisTarget
from gateway.core.replicas import replica_wait
from gateway.core.service import Clock, HumanFunctionService
from gateway.core.store import HumanFunctionStore
from gateway.core.webhooks import Webhooks
from schemas.settings import Settings

logger = logging.getLogger(__name__)

STOP_STEP_SECONDS = 5.0
"""Longest one step of stopping may take; past it, stopping goes on without it (and says so)."""


async def _stop_step(what: str, step: Awaitable[object]) -> None:
    """Run one step of stopping, bounded: a stop never hangs on one stuck part."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=STOP_STEP_SECONDS)
    if not done:
        task.cancel()
        logger.warning("stopping: %s did not finish within %.0f s; going on", what, STOP_STEP_SECONDS)
        return
    with contextlib.suppress(asyncio.CancelledError):
        task.result()


@dataclass
class Runtime:
    settings: Settings
    target: RedisTarget
    """Where Redis is (a URL, or the master of sentinels): every client of the process uses it."""
    redis: Redis
    service: HumanFunctionService
    events: Events
    keyring: KeyRing
    sessions: Any = None
    """The MCP session manager (``gateway.mcp.sessions.SharedSessionManager``), once the app runs."""
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
    """Connect to Redis, start the events reader and the reaper; close all on exit.

    Nothing here needs Redis to be up: a gateway started during an outage serves its health
    endpoints and says "unavailable" until Redis answers.
    """
    policies = load_policies(settings)  # an invalid file stops the process before anything opens
    try:
        target = RedisTarget.of(settings)
    except RedisNotConfigured as exc:
        raise RuntimeError(f"{exc} (humangate serve starts an embedded Redis)") from None
    redis = async_redis(target)
    store = HumanFunctionStore(
        redis,
        retention=settings.result_retention,
        replicas=replica_wait(settings),
        audit=audit_settings(settings),
    )
    kwargs = {} if clock is None else {"clock": clock}
    webhooks = Webhooks(
        redis, policies.webhooks, settings.webhook_retry_schedule, answers=settings.audit_answers
    )
    service = HumanFunctionService(
        store, JobRecorder(), settings, policies=policies, webhooks=webhooks, **kwargs
    )
    events = Events(target, store, settings.poll_interval)
    runtime = Runtime(settings, target, redis, service, events, KeyRing(redis, settings))
    await events.start()
    service.returned.start()
    reaper = asyncio.create_task(reap_forever(service), name="humangate-reaper")
    try:
        yield runtime
    finally:
        reaper.cancel()
        await _stop_step("the reaper", reaper)
        await _stop_step("the events reader", events.stop())
        await _stop_step("the returned marks", service.returned.stop())
        await _stop_step("the channel clients", runtime._stack.aclose())
        await _stop_step("the Redis pool", redis.aclose())
