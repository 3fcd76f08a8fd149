"""The records of 2025-11-25 MCP sessions in Redis: what any gateway process needs to serve one
(``gateway.mcp.sessions``), and how many each caller keeps open."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import store_operation, text

SESSION_TTL = 1800
"""Seconds a session's record outlives its last request (the SDK's own idle timeout)."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What a process needs to serve a session it did not open."""

    owner: str
    """``Caller.identity`` of whoever opened it."""
    version: str
    """The negotiated protocol version."""
    params: dict[str, Any]
    """The client's ``initialize`` parameters (its capabilities and identity)."""


class SessionRegistry:
    """Session records in Redis, and the sessions each caller keeps open."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    @store_operation
    async def count(self, owner: str) -> int:
        """How many sessions ``owner`` keeps open now."""
        key = keys.mcp_sessions_of(owner)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, "-inf", int(time.time() * 1000))
            pipe.zcard(key)
            _, count = await pipe.execute()
        return int(count)

    @store_operation
    async def save(self, session_id: str, record: SessionRecord) -> None:
        key = keys.mcp_session(session_id)
        owned = keys.mcp_sessions_of(record.owner)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "owner": record.owner,
                    "version": record.version,
                    "params": json.dumps(record.params),
                },
            )
            pipe.expire(key, SESSION_TTL)
            pipe.zadd(owned, {session_id: int((time.time() + SESSION_TTL) * 1000)})
            pipe.expire(owned, SESSION_TTL)
            await pipe.execute()

    @store_operation
    async def load(self, session_id: str) -> SessionRecord | None:
        owner, version, params = await self.redis.hmget(
            keys.mcp_session(session_id), ["owner", "version", "params"]
        )
        if owner is None or version is None or params is None:
            return None
        return SessionRecord(text(owner), text(version), json.loads(params))

    @store_operation
    async def touch(self, session_id: str, owner: str) -> None:
        owned = keys.mcp_sessions_of(owner)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.expire(keys.mcp_session(session_id), SESSION_TTL)
            pipe.zadd(owned, {session_id: int((time.time() + SESSION_TTL) * 1000)}, xx=True)
            pipe.expire(owned, SESSION_TTL)
            await pipe.execute()

    @store_operation
    async def delete(self, session_id: str, owner: str) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(keys.mcp_session(session_id))
            pipe.zrem(keys.mcp_sessions_of(owner), session_id)
            await pipe.execute()
