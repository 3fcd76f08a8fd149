"""Who is calling: API keys from the environment and from Redis (stored hashed), and timeouts.

A caller with ``Authorization: Bearer <key>`` is authenticated; no header makes it anonymous; a
wrong key is refused, never downgraded to anonymous.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import store_operation, text
from schemas.errors import AuthError, InvalidRequestError
from schemas.policies import NAME_RULE, is_name
from schemas.settings import Settings

ANONYMOUS = "anonymous"
"""The requester name of callers without a key."""

CALLER_STATE_KEY = "humangate_caller"
"""Where the auth middleware leaves the ``Caller`` in the ASGI scope's state."""

ANONYMOUS_RATE_LIMIT = 20
"""New requests per minute of the anonymous callers of one address, unless set otherwise."""

ANONYMOUS_MAX_PENDING = 10
"""Pending requests of the anonymous callers of one address, unless set otherwise."""

KEY_PREFIX = "hg_"
"""Prefix of generated keys, so a leaked one is easy to recognise in logs and scanners."""

GET_A_KEY = "an operator of this gateway makes one with: humangate keys create NAME"
"""How a caller refused for its key gets one (the 401's text says it)."""

CREATE_KEY = """
-- KEYS[1] the keys hash; ARGV: name, digest, record. Creates the key unless a stored key already
-- has that name (an operator key or not): returns "" when created, else the kind of the holder.
for _, record in ipairs(redis.call('HVALS', KEYS[1])) do
  local stored = cjson.decode(record)
  if stored['name'] == ARGV[1] then
    if stored['operator'] == true then return 'operator' end
    return 'caller'
  end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
return ''
"""
"""Creating a key and checking its name is free, in one atomic step (two ``keys create`` at once
cannot both take a name)."""


@dataclass(frozen=True, slots=True)
class Caller:
    name: str
    """Who asks, as requests show it: the key's name, or ``anonymous``."""
    authenticated: bool
    address: str = ""
    """The client's address (after trusted proxies), which tells anonymous callers apart."""

    @property
    def identity(self) -> str:
        """What owns requests, tasks and sessions, and what limits count: one per API key name, and
        one per client address for anonymous callers (docs/callers.md#identities: not one shared identity)."""
        return f"key:{self.name}" if self.authenticated else f"{ANONYMOUS}:{self.address or 'unknown'}"

    def timeout(self, settings: Settings) -> float:
        """Seconds this caller's requests wait: 180 anonymous, 300 authenticated by default."""
        return settings.authenticated_timeout if self.authenticated else settings.anonymous_timeout

    def rate_limit(self, settings: Settings) -> int:
        """New requests per minute allowed to this caller's identity (docs/callers.md#limits)."""
        if self.authenticated:
            return settings.rate_limit
        return settings.anonymous_rate_limit or min(ANONYMOUS_RATE_LIMIT, settings.rate_limit)

    def max_pending(self, settings: Settings) -> int:
        """Pending requests at once allowed to this caller's identity (docs/callers.md#limits)."""
        if self.authenticated:
            return settings.max_pending
        return settings.anonymous_max_pending or min(ANONYMOUS_MAX_PENDING, settings.max_pending)

    def max_kept_bytes(self, settings: Settings) -> int:
        """Bytes of requests and answers this caller's identity may keep in Redis at once."""
        return settings.max_kept_bytes if self.authenticated else settings.max_kept_bytes_anonymous

    def keep_ended(self, settings: Settings) -> float:
        """Seconds this caller's requests are kept after their deadline (a day for a key)."""
        return keys.RESULT_GRACE_SECONDS if self.authenticated else settings.anonymous_keep_ended


ANONYMOUS_CALLER = Caller(ANONYMOUS, authenticated=False)


class Owned(Protocol):
    """Anything a caller creates: a Human Function, a task."""

    @property
    def owner(self) -> str: ...


def owns(caller: Caller, owned: Owned) -> bool:
    """Whether ``caller`` created ``owned``: the one place that decides who may see, re-attach to,
    answer in its own client, or withdraw a request or task."""
    return bool(owned.owner) and owned.owner == caller.identity


def digest(key: str) -> str:
    """How keys are stored and compared: SHA-256 (keys are random, so no slow hash is needed)."""
    return hashlib.sha256(key.encode()).hexdigest()


def env_keys(settings: Settings) -> dict[str, str]:
    """``HUMANGATE_API_KEYS`` (``name:key,name:key``) as digest -> name."""
    if settings.api_keys is None:
        return {}
    found: dict[str, str] = {}
    for pair in settings.api_keys.get_secret_value().split(","):
        name, sep, key = pair.strip().partition(":")
        if pair.strip() and (not sep or not name or not key):
            raise InvalidRequestError("HUMANGATE_API_KEYS: each entry must be name:key")
        if key:
            found[digest(key)] = name
    return found


def key_names(records: Mapping[Any, Any]) -> set[str]:
    """The names of every key among stored key records (``HGETALL`` of the keys hash)."""
    return {str(json.loads(record)["name"]) for record in records.values()}


def operator_names(records: Mapping[Any, Any]) -> set[str]:
    """The names of the operator keys among stored key records (``HGETALL`` of the keys hash)."""
    names = set()
    for record in records.values():
        data = json.loads(record)
        if data.get("operator") is True:
            names.add(str(data["name"]))
    return names


class KeyRing:
    """API keys: the environment's plus those created with ``humangate keys create``."""

    def __init__(self, redis: Redis, settings: Settings) -> None:
        self.redis = redis
        self.settings = settings
        self._env = env_keys(settings)

    @store_operation
    async def identify(self, authorization: str | None, address: str = "") -> Caller:
        """The caller an ``Authorization`` header names; ``AuthError`` for a wrong or missing key."""
        if authorization is None or not authorization.strip():
            if self.settings.require_auth:
                raise AuthError(f"an API key is required: send Authorization: Bearer <key> ({GET_A_KEY})")
            return Caller(ANONYMOUS, authenticated=False, address=address)
        scheme, _, key = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise AuthError(f"Authorization must be 'Bearer <api key>' ({GET_A_KEY})")
        hashed = digest(key.strip())
        name = self._env.get(hashed)
        if name is not None:
            return Caller(name, authenticated=True, address=address)
        record = await self._stored(hashed)
        if record is None:
            raise AuthError(
                f"invalid API key: this gateway has no such key (mistyped, or revoked); {GET_A_KEY}"
            )
        return Caller(str(record["name"]), authenticated=True, address=address)

    async def create(self, name: str, *, operator: bool = False) -> str:
        """Make a new key for ``name`` (an operator key with ``operator``); the key itself is
        returned once and never stored. ``InvalidRequestError`` for a name that breaks the rule or
        that a key already has (a name is one key: its requests, limits and approvals are its own)."""
        if not is_name(name):
            raise InvalidRequestError(f"key name: {name!r} breaks the rule: {NAME_RULE}")
        if name in self._env.values():
            raise InvalidRequestError(
                f"key name: {name!r} is already the name of a key in HUMANGATE_API_KEYS; choose another name"
            )
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        fields: dict[str, object] = {"name": name, "created": time.time()}
        if operator:
            fields["operator"] = True
        record = json.dumps(fields)
        holder = text(await self.redis.eval(CREATE_KEY, 1, keys.API_KEYS, name, digest(key), record))
        if holder:
            kind = "an operator" if holder == "operator" else "a caller"
            raise InvalidRequestError(
                f"key name: {name!r} is already the name of {kind} key; choose another name, "
                f"or revoke that key first (humangate keys revoke {name})"
            )
        return key

    @store_operation
    async def operator_name(self, key_digest: str) -> str | None:
        """The name of the stored operator key with this digest; ``None`` if there is none (never
        was, revoked, or not an operator key). Environment keys are never operator keys."""
        record = await self._stored(key_digest)
        return str(record["name"]) if record is not None and record.get("operator") is True else None

    async def _stored(self, key_digest: str) -> dict[str, Any] | None:
        """The record of the stored key with this digest (name, created, operator), if there is one."""
        stored = await self.redis.hget(keys.API_KEYS, key_digest)
        return None if stored is None else dict(json.loads(stored))

    async def list(self) -> list[dict[str, object]]:
        """Stored keys as {name, created, fingerprint, operator} (never the key), oldest first."""
        rows = []
        for hashed, record in (await self.redis.hgetall(keys.API_KEYS)).items():
            data = json.loads(record)
            fingerprint = text(hashed)
            rows.append(
                {
                    "name": data["name"],
                    "created": data["created"],
                    "fingerprint": fingerprint[:12],
                    "operator": data.get("operator") is True,
                }
            )
        return sorted(rows, key=lambda row: float(str(row["created"])))

    async def revoke(self, name: str) -> int:
        """Delete every stored key called ``name``; returns how many were removed."""
        removed = 0
        for hashed, record in (await self.redis.hgetall(keys.API_KEYS)).items():
            if json.loads(record)["name"] == name:
                removed += await self.redis.hdel(keys.API_KEYS, hashed)
        return removed
