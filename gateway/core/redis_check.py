"""Is this Redis safe to keep people's answers in? Used by ``serve``, ``/readyz`` and ``doctor``.

A Redis that evicts keys under memory pressure (any ``maxmemory-policy`` but ``noeviction``) may
silently drop a pending request, its answer or its delivery job; humangate refuses it. A Redis
without persistence loses every pending request when it restarts; humangate warns about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redis import Redis as SyncRedis
from redis.asyncio import Redis
from redis.exceptions import ResponseError

SAFE_POLICY = "noeviction"


def policy_problem(memory_info: Mapping[str, Any]) -> str | None:
    """What is wrong with a Redis's eviction policy (from ``INFO memory``), in plain words."""
    policy = str(memory_info.get("maxmemory_policy", SAFE_POLICY))
    if policy == SAFE_POLICY:
        return None
    return (
        f"Redis has maxmemory-policy {policy}, so it may evict pending requests and answers under memory "
        f"pressure; set it to {SAFE_POLICY} (in redis.conf: 'maxmemory-policy {SAFE_POLICY}', or run "
        f"'redis-cli CONFIG SET maxmemory-policy {SAFE_POLICY}' and 'CONFIG REWRITE') and start again"
    )


def persistence_warning(persistence_info: Mapping[str, Any], save: str | None) -> str | None:
    """A warning when Redis keeps nothing on disk (no AOF, no RDB snapshots); ``save`` is
    ``CONFIG GET save`` (``None`` when the server refuses CONFIG)."""
    if int(persistence_info.get("aof_enabled", 0)) or save is None or save.strip():
        return None
    return (
        "Redis keeps nothing on disk (appendonly no, no save points): a Redis restart loses every pending "
        "request; enable 'appendonly yes' in redis.conf"
    )


async def unsafe_reason(redis: Redis) -> str | None:
    """Why ``redis`` must not be used (for ``/readyz``), or ``None``."""
    return policy_problem(await redis.info("memory"))


def check(client: SyncRedis) -> tuple[str | None, str | None]:
    """(problem that refuses this Redis, warning) for ``serve`` and ``doctor``."""
    problem = policy_problem(client.info("memory"))
    try:
        save: str | None = str(client.config_get("save").get("save", ""))
    except ResponseError:  # managed Redis services often disable CONFIG
        save = None
    return problem, persistence_warning(client.info("persistence"), save)
