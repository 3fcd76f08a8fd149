"""Redis clients with the same fault settings in every process (gateway, subscriber, RQ workers).

redis-py's own defaults suit none of humangate's processes: ten retries with backoff on top of
5-second timeouts let one command hang for about a minute against a Redis that silently drops
packets, and a blocking read with no socket timeout waits forever. Every client humangate opens
comes from here, so a dead connection is noticed within ``DEAD_PEER_SECONDS`` and a command fails
(or succeeds on a fresh connection) within a few seconds; the callers decide what to do next.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

from redis import Redis as SyncRedis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.exceptions import BusyLoadingError, ReadOnlyError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from schemas.errors import StoreUnavailableError

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


def async_redis(url: str, *, socket_timeout: float = COMMAND_TIMEOUT, pool_size: int = POOL_SIZE) -> Redis:
    """An asyncio client on a blocking pool: a burst waits for a free connection (up to
    ``socket_timeout``) instead of failing with "Too many connections"."""
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=pool_size,
        timeout=socket_timeout,
        retry=AsyncRetry(ExponentialBackoff(cap=0.5, base=0.05), RETRIES),
        **_common(socket_timeout),
    )
    return Redis.from_pool(pool)


def sync_redis(url: str, *, socket_timeout: float = COMMAND_TIMEOUT) -> SyncRedis:
    """A synchronous client (RQ workers, CLI commands) with the same fault settings."""
    return SyncRedis.from_url(
        url, retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), RETRIES), **_common(socket_timeout)
    )


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means Redis could not be reached or could not serve (not a bug of ours)."""
    return isinstance(exc, UNAVAILABLE_ERRORS)


def text(value: object) -> str:
    """A value read from Redis as text (replies are bytes unless a client decodes them)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def safe_url(url: str) -> str:
    """A Redis URL without its password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


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
