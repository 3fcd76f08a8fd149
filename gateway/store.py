"""Human Functions in Redis: create, read, end exactly once, and the pending index.

Async (``redis.asyncio``) and free of FastAPI, so the RQ workers use it too. Terminal transitions
run in one Lua script: the first wins, later ones are refused and change nothing.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any

from redis.asyncio import Redis

from gateway import redis_keys as keys
from schemas.errors import AlreadyAnsweredError, ExpiredError, UnknownRequestError
from schemas.models import HumanFunction, Outcome, Status

logger = logging.getLogger(__name__)

FINISH_SCRIPT = """
-- KEYS[1]: the Human Function hash.
-- ARGV: status, outcome JSON, now, events channel, id, expired-outcome JSON.
-- An answer that arrives after the deadline ends the function as expired instead.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'missing', ''} end
if status ~= 'pending' then
  return {status, redis.call('HGET', KEYS[1], 'outcome') or ''}
end
local new_status, outcome = ARGV[1], ARGV[2]
if new_status ~= 'expired' and tonumber(ARGV[3]) >= tonumber(redis.call('HGET', KEYS[1], 'deadline')) then
  new_status, outcome = 'expired', ARGV[6]
end
redis.call('HSET', KEYS[1], 'status', new_status, 'outcome', outcome)
redis.call('PUBLISH', ARGV[4], ARGV[5])
return {'ok', redis.call('HGETALL', KEYS[1])}
"""
"""End a pending Human Function atomically; returns {'ok', the ended hash} or {old status, old outcome}."""

REPLACE_IF_EQUAL_SCRIPT = """
-- KEYS[1]: an attach key. ARGV: expected id, new id, expiry (ms since epoch).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
  return 1
end
return 0
"""
"""Point an attach key at a new Human Function only if it still names the ended one."""

DELETE_IF_EQUAL_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
"""Free an attach key once its Human Function ended, unless it already names a newer one."""


def _doc(hf: HumanFunction) -> str:
    return hf.model_dump_json(
        include={
            "id",
            "requester",
            "channel",
            "message",
            "request_schema",
            "created_at",
            "deadline",
            "form_secret",
        }
    )


class HumanFunctionStore:
    """All reads and writes of Human Functions; every key it writes has a TTL."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._finish = redis.register_script(FINISH_SCRIPT)
        self._replace = redis.register_script(REPLACE_IF_EQUAL_SCRIPT)
        self._release = redis.register_script(DELETE_IF_EQUAL_SCRIPT)

    async def create(self, hf: HumanFunction, fingerprint: str) -> tuple[HumanFunction, bool]:
        """Store ``hf`` unless a pending one with the same fingerprint exists; returns (hf, created)."""
        key = keys.human_function(hf.id)
        expire_at_ms = int((hf.deadline + keys.RESULT_GRACE_SECONDS) * 1000)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "doc": _doc(hf),
                    "status": hf.status.value,
                    "deadline": repr(hf.deadline),
                    "fingerprint": fingerprint,
                },
            )
            pipe.pexpireat(key, expire_at_ms)
            await pipe.execute()
        attach_key = keys.attach(fingerprint)
        deadline_ms = int(hf.deadline * 1000)
        for _ in range(3):
            if await self.redis.set(attach_key, hf.id, nx=True, pxat=deadline_ms):
                await self.redis.zadd(keys.PENDING, {hf.id: hf.deadline})
                return hf, True
            existing_id = await self.redis.get(attach_key)
            if existing_id is None:
                continue
            existing_id = _text(existing_id)
            try:
                existing = await self.get(existing_id)
            except UnknownRequestError:
                existing = None
            if existing is not None and existing.is_pending:
                await self.redis.delete(key)
                return existing, False
            if await self._replace(keys=[attach_key], args=[existing_id, hf.id, deadline_ms]):
                await self.redis.zadd(keys.PENDING, {hf.id: hf.deadline})
                return hf, True
        raise RuntimeError(f"hf={hf.id} could not claim its attach key")  # pragma: no cover - contention

    async def get(self, hf_id: str) -> HumanFunction:
        """The whole Human Function; ``UnknownRequestError`` if there is none (or it expired away)."""
        fields = await self.redis.hgetall(keys.human_function(hf_id))
        if not fields:
            raise UnknownRequestError(f"no request with id {hf_id!r} (it may have expired)")
        return _load(fields)

    async def get_by_token(self, token: str) -> HumanFunction:
        """The Human Function a form token opens; the secret is compared in constant time."""
        hf_id, _, secret = token.partition(".")
        if not hf_id or not secret or len(token) > 200:
            raise UnknownRequestError("this link is not valid")
        try:
            hf = await self.get(hf_id)
        except UnknownRequestError:
            raise UnknownRequestError("this link is not valid or has expired") from None
        if not hmac.compare_digest(hf.form_secret.encode(), secret.encode()):
            raise UnknownRequestError("this link is not valid or has expired")
        return hf

    async def poll(self, hf_id: str) -> tuple[Status | None, str | None]:
        """One cheap read for the waiting loop: (status, delivery error); status None once gone."""
        status, error = await self.redis.hmget(keys.human_function(hf_id), ["status", "delivery_error"])
        return (
            None if status is None else Status(_text(status)),
            None if error is None else _text(error),
        )

    async def finish(self, hf_id: str, outcome: Outcome, expired: Outcome) -> HumanFunction:
        """End a pending function with ``outcome``, or with ``expired`` if its deadline has passed.

        Returns the ended function (its status says which of the two happened). Raises
        ``AlreadyAnsweredError`` / ``ExpiredError`` if it had ended before, and changes nothing.
        """
        key = keys.human_function(hf_id)
        result = await self._finish(
            keys=[key],
            args=[
                outcome.status.value,
                outcome.model_dump_json(),
                repr(outcome.at),
                keys.EVENTS,
                hf_id,
                expired.model_dump_json(),
            ],
        )
        verdict, detail = _text(result[0]), result[1]
        if verdict == "missing":
            raise UnknownRequestError(f"no request with id {hf_id!r} (it may have expired)")
        if verdict != "ok":
            raise _closed_error(Outcome.model_validate_json(_text(detail)))
        fields = dict(zip(detail[::2], detail[1::2], strict=True))
        await self._forget_pending(hf_id, fields.get(b"fingerprint", fields.get("fingerprint")))
        return _load(fields)

    async def _forget_pending(self, hf_id: str, fingerprint: Any) -> None:
        """Take an ended function out of the pending index and free its attach key (one round trip).

        Not atomic with ``finish`` (the index is global, the attach key in another slot): a process
        that dies in between leaves a stale index entry, which the reaper drops."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zrem(keys.PENDING, hf_id)
            if fingerprint is not None:
                await self._release(keys=[keys.attach(_text(fingerprint))], args=[hf_id], client=pipe)
            await pipe.execute()

    async def drop_pending(self, hf_id: str) -> None:
        """Remove an id from the pending index (its keys are gone)."""
        await self.redis.zrem(keys.PENDING, hf_id)

    async def set_refs(self, hf_id: str, refs: dict[str, Any]) -> None:
        """Record where a channel posted the request (message ids), for later updates."""
        await self.redis.hset(keys.human_function(hf_id), mapping={"refs": json.dumps(refs)})

    async def count_delivery_attempt(self, hf_id: str) -> int:
        """Count one more start of the deliver job; returns the count including this one."""
        return int(await self.redis.hincrby(keys.human_function(hf_id), "attempts", 1))

    async def set_delivery_error(self, hf_id: str, error: str | None) -> None:
        """Record (or clear) why delivery failed, so the waiting agent is told."""
        key = keys.human_function(hf_id)
        if error is None:
            await self.redis.hdel(key, "delivery_error")
        else:
            await self.redis.hset(key, mapping={"delivery_error": error[:500]})

    async def due(self, now: float, limit: int = 100) -> list[str]:
        """Ids of pending functions whose deadline has passed (for the reaper)."""
        ids = await self.redis.zrangebyscore(keys.PENDING, "-inf", now, start=0, num=limit)
        return [_text(i) for i in ids]

    async def pending_ids(self) -> list[str]:
        """Every pending id, soonest deadline first."""
        return [_text(i) for i in await self.redis.zrange(keys.PENDING, 0, -1)]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _load(fields: dict[Any, Any]) -> HumanFunction:
    data = {_text(k): _text(v) for k, v in fields.items()}
    doc: dict[str, Any] = json.loads(data["doc"])
    doc["status"] = data["status"]
    if data.get("outcome"):
        doc["outcome"] = json.loads(data["outcome"])
    if data.get("refs"):
        doc["refs"] = json.loads(data["refs"])
    doc["delivery_error"] = data.get("delivery_error")
    doc["delivery_attempts"] = int(data.get("attempts", 0))
    return HumanFunction.model_validate(doc)


def _closed_error(outcome: Outcome) -> AlreadyAnsweredError | ExpiredError:
    if outcome.status is Status.EXPIRED:
        return ExpiredError("this request has expired")
    verb = {Status.ACCEPTED: "answered", Status.DECLINED: "declined", Status.CANCELED: "canceled"}[
        outcome.status
    ]
    return AlreadyAnsweredError(f"already {verb} by {outcome.by or 'someone else'}")
