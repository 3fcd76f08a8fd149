"""Redis clients with the same fault settings in every process (gateway, subscriber, RQ workers).

redis-py's own defaults suit none of humangate's processes: ten retries with backoff on top of
5-second timeouts let one command hang for about a minute against a Redis that silently drops
packets, and a blocking read with no socket timeout waits forever. Every client humangate opens
comes from here, so a dead connection is noticed within ``DEAD_PEER_SECONDS`` and a command fails
(or succeeds on a fresh connection) within a few seconds; the callers decide what to do next.

A ``RedisTarget`` (``gateway.core.redis_target``) says where Redis is: one URL, or the master named
by Redis Sentinels. Sentinel-managed pools ask the sentinels for the master on every new connection
and drop a connection that finds the old master demoted (``ReadOnlyError``), so a failover costs a
failed command or two, and the next one runs on the new master.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from redis import Redis as SyncRedis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelPool
from redis.backoff import ExponentialBackoff
from redis.exceptions import BusyLoadingError, ReadOnlyError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

from gateway.core.redis_target import SENTINEL_TIMEOUT, RedisTarget, safe_url
from schemas.errors import StoreUnavailableError

__all__ = ["RedisTarget", "async_redis", "safe_url", "sync_redis"]

COMMAND_TIMEOUT = 3.0
"""Seconds one command may wait for its reply before its connection is dropped as dead (humangate's
commands and scripts take milliseconds; a reply this late means the server or the path is gone)."""

CONNECT_TIMEOUT = 3.0
"""Seconds to open a connection (a Redis that is down refuses at once; a blackholed one does not)."""

KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_PROBES = 5, 2, 3
"""TCP keepalive: probe an idle connection after 5 s, every 2 s, give up after 3 unanswered probes."""

DEAD_PEER_SECONDS = KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_PROBES
"""How long a silently dead connection can go unnoticed (11 s), whatever it is doing."""

HEALTH_CHECK_INTERVAL = 10
"""An idle pooled connection is PINGed before reuse if unused this many seconds."""

RETRIES = 1
"""A failed command is retried once, on a fresh connection: that hides a stale pooled connection
(a Redis restart) but not an outage, which the caller handles with its own backoff."""

OPERATION_DEADLINE = 2 * COMMAND_TIMEOUT + 1
"""Seconds one operation on Redis may take in all (a health check, a retry on a fresh connection
and the command itself included) before it fails as "store unavailable"."""

POOL_SIZE = 64
"""Connections one gateway process opens at most; commands queue for a free one under a burst."""

POOL_WAIT = OPERATION_DEADLINE
"""Seconds a command may queue for a free pooled connection. Queueing is not a dead server: a burst
of answers on a loaded machine can keep every connection busy for longer than one command may
take, so the wait is bounded only by the whole operation's deadline (``store_operation``)."""

UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    BusyLoadingError,
    ReadOnlyError,
)
"""Errors that mean "Redis cannot serve us right now": retry later, never blame the caller."""


def keepalive_options() -> dict[int, int]:
    """The TCP keepalive options of this platform (Linux has all three)."""
    options: dict[int, int] = {}
    for name, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    ):
        constant = getattr(socket, name, None)
        if constant is not None:
            options[constant] = value
    return options


def _common(socket_timeout: float) -> dict[str, Any]:
    return {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "socket_keepalive": True,
        "socket_keepalive_options": keepalive_options(),
        "health_check_interval": HEALTH_CHECK_INTERVAL,
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
        # No CLIENT SETINFO on connect: two more round trips, each waiting out the timeout when
        # Redis cannot answer, before the command itself is even sent.
        "driver_info": None,
    }


class _BlockingSentinelPool(AsyncSentinelPool, BlockingConnectionPool):
    """A Sentinel-managed pool on which a burst waits for a free connection (as the plain one does),
    and which closes its sentinels' clients with itself."""

    async def aclose(self) -> None:
        await super().aclose()
        await self.sentinel_manager.aclose()


class _SentinelPool(SentinelConnectionPool):
    """A synchronous Sentinel-managed pool that closes its sentinels' clients with itself."""

    def disconnect(self, inuse_connections: bool = True) -> None:
        super().disconnect(inuse_connections)
        if inuse_connections:  # the client closes (a new master only drops idle connections)
            for sentinel in self.sentinel_manager.sentinels:
                sentinel.close()


def _sentinel_kwargs(target: RedisTarget) -> dict[str, Any]:
    return {
        "socket_timeout": SENTINEL_TIMEOUT,
        "socket_connect_timeout": SENTINEL_TIMEOUT,
        "driver_info": None,
        **target.sentinel_options(),
    }


def as_target(target: RedisTarget | str) -> RedisTarget:
    """A target, from itself or from a plain URL."""
    return target if isinstance(target, RedisTarget) else RedisTarget(target)


def async_redis(
    target: RedisTarget | str, *, socket_timeout: float = COMMAND_TIMEOUT, pool_size: int = POOL_SIZE
) -> Redis:
    """An asyncio client on a blocking pool: a burst waits for a free connection (up to
    ``POOL_WAIT``, or ``socket_timeout`` if longer) instead of failing with "Too many connections"."""
    target = as_target(target)
    retry = AsyncRetry(ExponentialBackoff(cap=0.5, base=0.05), RETRIES)
    if not target.is_sentinel:
        pool = BlockingConnectionPool.from_url(
            target.url,
            max_connections=pool_size,
            timeout=max(socket_timeout, POOL_WAIT),
            retry=retry,
            **_common(socket_timeout),
        )
        return Redis.from_pool(pool)
    sentinel = AsyncSentinel(target.sentinel_addresses(), sentinel_kwargs=_sentinel_kwargs(target))  # type: ignore[no-untyped-call, unused-ignore]
    client: Redis = sentinel.master_for(
        target.master,
        redis_class=Redis,
        connection_pool_class=_BlockingSentinelPool,
        max_connections=pool_size,
        timeout=max(socket_timeout, POOL_WAIT),
        retry=retry,
        **(_common(socket_timeout) | target.master_options()),
    )
    return client


def sync_redis(target: RedisTarget | str, *, socket_timeout: float = COMMAND_TIMEOUT) -> SyncRedis:
    """A synchronous client (RQ workers, CLI commands) with the same fault settings."""
    target = as_target(target)
    retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), RETRIES)
    if not target.is_sentinel:
        return SyncRedis.from_url(target.url, retry=retry, **_common(socket_timeout))
    sentinel = Sentinel(target.sentinel_addresses(), sentinel_kwargs=_sentinel_kwargs(target))  # type: ignore[no-untyped-call, unused-ignore]
    client: SyncRedis = sentinel.master_for(  # type: ignore[no-untyped-call, unused-ignore]
        target.master,
        redis_class=SyncRedis,
        connection_pool_class=_SentinelPool,
        retry=retry,
        **(_common(socket_timeout) | target.master_options()),
    )
    return client


def sentinel_of(target: RedisTarget) -> Sentinel:
    """A synchronous client of the sentinels themselves (``doctor`` asks them about the topology)."""
    return Sentinel(target.sentinel_addresses(), sentinel_kwargs=_sentinel_kwargs(target))  # type: ignore[no-untyped-call, unused-ignore]


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means Redis could not be reached or could not serve (not a bug of ours)."""
    return isinstance(exc, UNAVAILABLE_ERRORS)


def text(value: object) -> str:
    """A value read from Redis as text (replies are bytes unless a client decodes them)."""
    return value.decode() if isinstance(value, bytes) else str(value)


P = ParamSpec("P")
T = TypeVar("T")


def store_operation(method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Bound an async operation on Redis by ``OPERATION_DEADLINE`` and turn "Redis unreachable"
    errors into ``StoreUnavailableError``: nothing waits on Redis longer, and callers either retry
    or tell their client to."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            async with asyncio.timeout(OPERATION_DEADLINE):
                return await method(*args, **kwargs)
        except TimeoutError as exc:
            raise StoreUnavailableError(f"Redis did not answer within {OPERATION_DEADLINE:.0f} s") from exc
        except Exception as exc:
            if is_unavailable(exc):
                raise StoreUnavailableError(f"Redis is unavailable ({type(exc).__name__}: {exc})") from exc
            raise

    return wrapper
