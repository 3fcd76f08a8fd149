"""Webhook deliveries in Redis: queued by the gateway, claimed and settled by the workers' senders,
listed and redriven by the CLI (docs/webhooks.md).

An event's body is written once (``keys.webhook_event``) and each delivery (one event to one URL)
is a hash plus its next due time in ``keys.WEBHOOKS_DUE``. A sender claims due deliveries with
``CLAIM``, which moves their due time a lease ahead and stamps a claim token: a worker killed
mid-send leaves them to be claimed again when the lease lapses, and ``SETTLE`` records an attempt
only for the token that claimed it, so no delivery is ever sent by two senders at once.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import text

CLAIM_LEASE = 120.0
"""Seconds a claimed delivery belongs to its sender; far above a send's timeout, so only a dead
sender's claims ever lapse."""

DELIVERED_KEEP = 3600
"""Seconds a delivered delivery (and, once all of its event's are delivered, the body) is kept."""

FAILED_GRACE = 7 * 24 * 3600
"""Seconds a failed delivery (and its body) is kept for ``redrive`` after its schedule ends."""


class State:
    """The states of a delivery."""

    PENDING = "pending"
    DELIVERED = "delivered"
    GONE = "gone"
    """The receiver answered 410 Gone: no more attempts."""
    FAILED = "failed"


CLAIM = """
-- KEYS: 1 the due index. ARGV: 1 now, 2 lease, 3 limit, 4 claim token, 5 delivery key prefix,
-- 6 event key prefix.
-- Returns, for each delivery claimed (due now, moved a lease ahead, stamped with the token), its
-- id, its fields (flat, as HGETALL) and its event's body (false when it expired).
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local claimed = {}
for _, id in ipairs(ids) do
  local key = ARGV[5] .. id
  local event = redis.call('HGET', key, 'event')
  if event then
    redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), id)
    redis.call('HSET', key, 'claim', ARGV[4])
    table.insert(claimed, id)
    table.insert(claimed, redis.call('HGETALL', key))
    table.insert(claimed, redis.call('GET', ARGV[6] .. event))
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return claimed
"""
"""Claim the due deliveries (see the module docstring)."""

SETTLE = """
-- KEYS: 1 the delivery, 2 the due index, 3 the failed index, 4 the event's body, 5 its count of
-- deliveries left.
-- ARGV: 1 delivery id, 2 claim token, 3 new state, 4 next due time (pending), 5 now, 6 error, 7 code,
-- 8 seconds a delivered one is kept.
-- Returns 1 when recorded, 0 when the claim was not this token's (nothing changes).
if redis.call('HGET', KEYS[1], 'claim') ~= ARGV[2] then return 0 end
redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'updated', ARGV[5], 'error', ARGV[6], 'code', ARGV[7],
  'claim', '')
if ARGV[3] == 'pending' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
  if ARGV[3] == 'delivered' then
    redis.call('EXPIRE', KEYS[1], ARGV[8])
    if redis.call('DECR', KEYS[5]) <= 0 then
      redis.call('EXPIRE', KEYS[4], ARGV[8])
      redis.call('EXPIRE', KEYS[5], ARGV[8])
    end
  else
    redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
  end
end
return 1
"""
"""Record one attempt of a claimed delivery and what comes next."""


def new_event_id() -> str:
    """A Standard Webhooks message id (``webhook-id``): ``msg_`` and 128 random bits."""
    return f"msg_{secrets.token_hex(16)}"


def delivery_id(event_id: str, url: str) -> str:
    """The id of an event's delivery to ``url`` (a URL is in the file once)."""
    return f"{event_id}.{hashlib.sha256(url.encode()).hexdigest()[:8]}"


def kept_seconds(schedule: list[float]) -> int:
    """How long an event's body and deliveries are kept: its whole schedule, then ``FAILED_GRACE``."""
    return int(sum(schedule)) + FAILED_GRACE


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery as stored."""

    id: str
    event: str
    type: str
    url: str
    state: str
    attempts: int
    error: str
    code: str
    created: float
    updated: float

    @classmethod
    def of(cls, delivery: str, fields: dict[str, str]) -> Delivery:
        return cls(
            delivery,
            fields.get("event", ""),
            fields.get("type", ""),
            fields.get("url", ""),
            fields.get("state", ""),
            int(fields.get("attempts") or 0),
            fields.get("error", ""),
            fields.get("code", ""),
            float(fields.get("created") or 0),
            float(fields.get("updated") or 0),
        )


class WebhookStore:
    """The deliveries of one Redis."""

    def __init__(self, redis: Redis, schedule: list[float]) -> None:
        self.redis = redis
        self.schedule = schedule
        self._claim = redis.register_script(CLAIM)
        self._settle = redis.register_script(SETTLE)

    async def queue(self, event_id: str, event_type: str, body: str, urls: list[str], now: float) -> None:
        """Store an event's body once and queue its delivery to each URL, due now (one round trip)."""
        keep = kept_seconds(self.schedule)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(keys.webhook_event(event_id), body, ex=keep)
            pipe.set(keys.webhook_event_left(event_id), len(urls), ex=keep)
            for url in urls:
                delivery = delivery_id(event_id, url)
                pipe.hset(
                    keys.webhook_delivery(delivery),
                    mapping={
                        "event": event_id,
                        "type": event_type,
                        "url": url,
                        "state": State.PENDING,
                        "attempts": 0,
                        "created": repr(now),
                    },
                )
                pipe.expire(keys.webhook_delivery(delivery), keep)
                pipe.zadd(keys.WEBHOOKS_DUE, {delivery: now})
            await pipe.execute()

    async def claim(self, now: float, limit: int, token: str) -> list[tuple[Delivery, str | None]]:
        """Claim up to ``limit`` due deliveries for the sender with ``token``: each with its event's
        body (``None`` if it expired), in one round trip."""
        args: list[str | int] = [
            repr(now),
            repr(CLAIM_LEASE),
            limit,
            token,
            keys.WEBHOOK_DELIVERY_PREFIX,
            keys.WEBHOOK_EVENT_PREFIX,
        ]
        flat: list[Any] = await self._claim(keys=[keys.WEBHOOKS_DUE], args=args)
        claimed: list[tuple[Delivery, str | None]] = []
        for raw_id, raw_fields, body in zip(flat[::3], flat[1::3], flat[2::3], strict=True):
            fields = dict(zip(map(text, raw_fields[::2]), map(text, raw_fields[1::2]), strict=True))
            claimed.append((Delivery.of(text(raw_id), fields), text(body) if body else None))
        return claimed

    async def settle(
        self, delivery: Delivery, token: str, state: str, now: float, error: str = "", code: str = ""
    ) -> tuple[bool, str]:
        """Record one attempt: ``state`` is what it ended in (a ``pending`` one is retried per the
        schedule, or failed past its end). Returns (recorded, the state recorded)."""
        due = ""
        if state == State.PENDING:
            done = delivery.attempts + 1
            if done > len(self.schedule):
                state = State.FAILED
                error = f"{error} (after {done} attempts)"
            else:
                due = repr(now + self.schedule[done - 1])
        recorded = await self._settle(
            keys=[
                keys.webhook_delivery(delivery.id),
                keys.WEBHOOKS_DUE,
                keys.WEBHOOKS_FAILED,
                keys.webhook_event(delivery.event),
                keys.webhook_event_left(delivery.event),
            ],
            args=[delivery.id, token, state, due, repr(now), error[:500], code, DELIVERED_KEEP],
        )
        return bool(recorded), state

    async def failed(self) -> list[Delivery]:
        """The failed and gone deliveries, oldest first (those whose record expired are dropped)."""
        ids = [text(i) for i in await self.redis.zrange(keys.WEBHOOKS_FAILED, 0, -1)]
        found: list[Delivery] = []
        for delivery in ids:
            raw: dict[Any, Any] = await self.redis.hgetall(keys.webhook_delivery(delivery))
            if not raw:
                await self.redis.zrem(keys.WEBHOOKS_FAILED, delivery)
                continue
            found.append(Delivery.of(delivery, {text(k): text(v) for k, v in raw.items()}))
        return found

    async def redrive(self, ids: list[str], now: float) -> list[str]:
        """Queue failed (or gone) deliveries again, due now, with a fresh schedule; returns those
        queued (an id that is not failed, or whose body expired, is left out)."""
        keep = kept_seconds(self.schedule)
        queued: list[str] = []
        for delivery in ids:
            key = keys.webhook_delivery(delivery)
            event = await self.redis.hget(key, "event")
            if event is None or not await self.redis.exists(keys.webhook_event(text(event))):
                continue
            # Whoever removes it from the failed index redrives it: never twice at once.
            if not await self.redis.zrem(keys.WEBHOOKS_FAILED, delivery):
                continue
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping={"state": State.PENDING, "attempts": 0, "error": "", "code": ""})
                pipe.expire(key, keep)
                pipe.expire(keys.webhook_event(text(event)), keep)
                pipe.expire(keys.webhook_event_left(text(event)), keep)
                pipe.zadd(keys.WEBHOOKS_DUE, {delivery: now})
                await pipe.execute()
            queued.append(delivery)
        return queued
