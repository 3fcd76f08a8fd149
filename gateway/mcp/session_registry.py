"""The records of 2025-11-25 MCP sessions in Redis: what any gateway process needs to serve one
(``gateway.mcp.sessions``), and how many each caller keeps open.

A caller's cap is kept by reserving a slot before its session is served (``admit``, one Lua script:
count and reserve in one step, whichever process asks), turning the reservation into the session
when it opens (``save``) and giving it back when it does not (``release``). A slot is free again
when its session is deleted or expires, or, for a reservation whose process died, after
``OPENING_LEASE``."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core import store_scripts as scripts
from gateway.core.redis_client import store_operation, text

SESSION_TTL = 1800
"""Seconds a session's record outlives its last request (the SDK's own idle timeout)."""

OPENING_LEASE = 60
"""Seconds a slot reserved for a session being opened is held: the ``initialize`` reply starts well
within it, and a process that dies before then frees the slot when it passes."""

RESERVATION_PREFIX = "opening:"
"""How the member of a reserved slot starts (a session id is 32 hex digits, so they never clash)."""


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
        self._admit = redis.register_script(scripts.ADMIT)

    @store_operation
    async def admit(self, owner: str, cap: int) -> str | None:
        """Reserve a slot for a new session of ``owner`` if it keeps fewer than ``cap`` (open or
        being opened); the reservation to hand to ``save`` or ``release``, or ``None`` when full."""
        reservation = RESERVATION_PREFIX + secrets.token_hex(8)
        now = int(time.time() * 1000)
        reserved = await self._admit(
            keys=[keys.mcp_sessions_of(owner)],
            args=[
                scripts.json_argument(
                    scripts.AdmitArgs(
                        now_ms=now, allowed=cap, member=reservation, expiry_ms=now + OPENING_LEASE * 1000
                    )
                )
            ],
        )
        return reservation if int(reserved) == 1 else None

    @store_operation
    async def release(self, owner: str, reservation: str) -> None:
        """Give back a slot reserved for a session that did not open."""
        await self.redis.zrem(keys.mcp_sessions_of(owner), reservation)

    @store_operation
    async def save(self, session_id: str, record: SessionRecord, reservation: str | None = None) -> None:
        """Record an opened session; its ``reservation`` (from ``admit``) becomes the session."""
        key = keys.mcp_session(session_id)
        owned = keys.mcp_sessions_of(record.owner)
        async with self.redis.pipeline(transaction=True) as pipe:
            if reservation is not None:
                pipe.zrem(owned, reservation)
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
