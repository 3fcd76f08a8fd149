"""Web sign-ins: a sign-in under way at the provider, and the session cookie it ends in.

A sign-in under way is kept in Redis under a hash of its ``state`` (the PKCE verifier, the nonce,
where to go back to, and a hash of a cookie set on the browser that started it), for
``SIGN_IN_SECONDS``; the callback reads and deletes it in one transaction, so a ``state`` works
once, and only in the browser that started it. A session is 256 random bits in a cookie; Redis keeps
the person (verified email, name) under a hash of it for ``SESSION_SECONDS``. Neither cookie, nor
the verifier, nor the nonce is ever logged or a key name.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
from dataclasses import dataclass, field

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import store_operation, text
from gateway.signin.provider import Identity
from schemas.models import Person

logger = logging.getLogger(__name__)

COOKIE = "hg_web"
"""The session cookie (``HttpOnly``, ``SameSite=Lax``, ``Path=/``; ``Secure`` over HTTPS). Lax, not
Strict: the browser comes back from the provider through a cross-site redirect chain, on which a
Strict cookie is not sent; Lax still keeps it off every cross-site POST."""

SIGN_IN_COOKIE = "hg_sign_in"
"""The cookie that ties a sign-in under way to the browser that started it (``Path=/auth``)."""

SESSION_SECONDS = 8 * 3600
"""How long a web sign-in lasts (a working day; then the person signs in again)."""

SIGN_IN_SECONDS = 600
"""How long a person has to finish signing in at the provider."""

PERSON_CHANNEL = "email"
"""``Person.channel`` of someone signed in to the web: with ``Person.id``, ``email:<verified email>``."""

_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def new_secret() -> str:
    """256 random bits, URL-safe (cookies, state, nonce, PKCE verifier)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class SignInStart:
    """A sign-in just started: what goes to the provider, and the cookie for this browser."""

    state: str = field(repr=False)
    nonce: str = field(repr=False)
    verifier: str = field(repr=False)
    browser: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    """A sign-in under way, as the callback finds it."""

    nonce: str = field(repr=False)
    verifier: str = field(repr=False)
    next: str


def person_of(identity: Identity) -> Person:
    """The ``Person`` of a web sign-in: ``email:<verified email>`` with the provider's name."""
    return Person(channel=PERSON_CHANNEL, id=identity.email, name=identity.name)


class WebSessions:
    """Start and finish sign-ins, look sessions up, end them."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    @store_operation
    async def start(self, next_path: str, browser: str | None = None) -> SignInStart:
        """Keep a new sign-in that returns to ``next_path`` once the person has signed in. ``browser``:
        this browser's sign-in cookie if it has one already (another tab is signing in too), kept so
        that both sign-ins can finish."""
        if browser is None or not _TOKEN_SHAPE.fullmatch(browser):
            browser = new_secret()
        start = SignInStart(new_secret(), new_secret(), new_secret(), browser)
        record = keys.web_sign_in(_digest(start.state))
        async with self.redis.pipeline(transaction=True) as pipe:  # never a record without its TTL
            pipe.hset(
                record,
                mapping={
                    "browser": _digest(start.browser),
                    "nonce": start.nonce,
                    "verifier": start.verifier,
                    "next": next_path,
                },
            )
            pipe.expire(record, SIGN_IN_SECONDS)
            await pipe.execute()
        return start

    @store_operation
    async def take(self, state: str, browser: str | None) -> PendingSignIn | None:
        """The sign-in ``state`` names, deleted as it is read; ``None`` when there is none (expired,
        used already, forged) or another browser started it."""
        if not _TOKEN_SHAPE.fullmatch(state):
            return None
        record = keys.web_sign_in(_digest(state))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hgetall(record)
            pipe.delete(record)
            fields, _ = await pipe.execute()
        if not fields:
            return None
        data = {text(k): text(v) for k, v in fields.items()}
        if browser is None or not secrets.compare_digest(data["browser"], _digest(browser)):
            return None
        return PendingSignIn(data["nonce"], data["verifier"], data["next"])

    @store_operation
    async def open(self, identity: Identity) -> str:
        """A new session for ``identity``; its cookie."""
        cookie = new_secret()
        record = keys.web_session(_digest(cookie))
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                record, mapping={"email": identity.email, "name": identity.name, "created": time.time()}
            )
            pipe.expire(record, SESSION_SECONDS)
            await pipe.execute()
        logger.info("signed in to the web: %s", identity.email)
        return cookie

    @store_operation
    async def person(self, cookie: str | None) -> Person | None:
        """Who a session cookie signs in, or ``None``."""
        if cookie is None or not _TOKEN_SHAPE.fullmatch(cookie):
            return None
        fields = await self.redis.hgetall(keys.web_session(_digest(cookie)))
        if not fields:
            return None
        data = {text(k): text(v) for k, v in fields.items()}
        return person_of(Identity(data["email"], data["name"]))

    @store_operation
    async def close(self, cookie: str | None) -> None:
        """End the session of ``cookie`` (nothing when there is none)."""
        if cookie is not None and _TOKEN_SHAPE.fullmatch(cookie):
            if await self.redis.delete(keys.web_session(_digest(cookie))):
                logger.info("signed out of the web")
