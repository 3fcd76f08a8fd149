"""Inbox sign-ins: an operator key, posted once, becomes a session cookie; a person signed in to the
web with the organisation's OpenID provider (``gateway.signin``) is a session too; and the bound on
the live streams each of them holds open.

An operator sees and may answer every request (unless its policy names other approvers). A person
signed in to the web is no operator: their inbox holds only the pending requests whose approvers
name them (``email:<address>``), so signing in shows nobody else's requests.

The cookie is 256 random bits. Redis keeps the session under a hash of it, with the operator's name,
the digest of the key that signed in, and a CSRF token for the session's forms; the key itself is
never stored, and neither is the cookie. Every use of a session checks that its key is still a stored
operator key, so revoking the key (``humangate keys revoke``) ends its sessions at once.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass, field

from redis.asyncio import Redis

from channels.approvers import OPERATOR_PREFIX, approves
from gateway.core import redis_keys as keys
from gateway.core.callers import KeyRing, digest
from gateway.core.redis_client import store_operation, text
from gateway.signin.sessions import WebSessions
from schemas.models import HumanFunction, Person

logger = logging.getLogger(__name__)

COOKIE = "hg_inbox"
"""The session cookie's name (``HttpOnly``, ``SameSite=Strict``, ``Path=/inbox``; ``Secure`` over HTTPS)."""

COOKIE_PATH = "/inbox"
"""Where the browser sends the cookie: nowhere but the inbox."""

SESSION_SECONDS = 12 * 3600
"""How long a sign-in lasts (then the operator signs in again)."""

MAX_STREAMS_PER_OPERATOR = 4
"""Live-update streams one operator may hold open at once, over every gateway process (a few tabs)."""

STREAM_LEASE_SECONDS = 60
"""A stream's place in that count lasts this long unless renewed (it is, at every heartbeat), so a
process that died holding one gives it back within a minute."""

_COOKIE_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")

ADMIT_STREAM = """
-- KEYS: 1 the operator's streams. ARGV: 1 now, 2 lease end, 3 stream id, 4 most streams, 5 key TTL (s).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
"""Give a new stream a place among the operator's, unless all are taken; 1 if it got one."""


@dataclass(frozen=True, slots=True)
class Session:
    """One signed-in browser."""

    operator: str
    """The operator's key name; for a person signed in to the web, their name and email."""
    key_digest: str = field(repr=False)
    csrf: str = field(repr=False)
    cookie_digest: str = field(repr=False)
    person: Person | None = None
    """The person signed in to the web (``email:``), or ``None`` for an operator."""
    web_cookie: str = field(default="", repr=False)
    """The web session's cookie, kept in memory only, to check the session is still open."""

    @property
    def holder(self) -> str:
        """Who is signed in, in the approvers' forms: ``operator:alice`` or ``email:ada@example.com``."""
        if self.person is not None:
            return f"{self.person.channel}:{self.person.id}"
        return OPERATOR_PREFIX + self.operator

    def sees(self, hf: HumanFunction) -> bool:
        """Whether ``hf`` is in this inbox: every request for an operator; for a person, the ones
        whose approvers name them."""
        return self.person is None or (bool(hf.approvers) and approves(hf, [self.holder]))

    def csrf_ok(self, token: str | None) -> bool:
        """Whether a form carried this session's CSRF token (compared in constant time)."""
        return token is not None and hmac.compare_digest(self.csrf.encode(), token.encode())


def _cookie_digest(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def person_session(person: Person, web_cookie: str) -> Session:
    """The inbox session of a person signed in to the web. Its CSRF token is derived from the web
    session's cookie (unguessable by another site, the same on every page of the session, stored
    nowhere)."""
    csrf = hashlib.sha256(b"humangate inbox csrf\0" + web_cookie.encode()).hexdigest()
    return Session(f"{person.name} ({person.id})", "", csrf, _cookie_digest(web_cookie), person, web_cookie)


class OperatorSessions:
    """Sign in, look up, sign out, and count the live streams of operators."""

    def __init__(self, redis: Redis, keyring: KeyRing) -> None:
        self.redis = redis
        self.keyring = keyring
        self._admit = redis.register_script(ADMIT_STREAM)

    @store_operation
    async def sign_in(self, key: str) -> tuple[str, Session] | None:
        """A new session for an operator key, and its cookie; ``None`` for any other key."""
        key_digest = digest(key.strip())
        operator = await self.keyring.operator_name(key_digest)
        if operator is None:
            return None
        cookie = secrets.token_urlsafe(32)
        session = Session(operator, key_digest, secrets.token_urlsafe(32), _cookie_digest(cookie))
        record = keys.inbox_session(session.cookie_digest)
        async with self.redis.pipeline(transaction=True) as pipe:  # never a session without its TTL
            pipe.hset(
                record,
                mapping={
                    "operator": operator,
                    "key": key_digest,
                    "csrf": session.csrf,
                    "created": time.time(),
                },
            )
            pipe.expire(record, SESSION_SECONDS)
            await pipe.execute()
        logger.info("operator %s signed in to the inbox", operator)
        return cookie, session

    @store_operation
    async def load(self, cookie: str | None) -> Session | None:
        """The session of a cookie, if it exists and its key is still an operator key."""
        if cookie is None or not _COOKIE_SHAPE.fullmatch(cookie):
            return None
        cookie_digest = _cookie_digest(cookie)
        fields = await self.redis.hgetall(keys.inbox_session(cookie_digest))
        if not fields:
            return None
        data = {text(k): text(v) for k, v in fields.items()}
        session = Session(data["operator"], data["key"], data["csrf"], cookie_digest)
        return session if await self.still_valid(session) else None

    async def still_valid(self, session: Session) -> bool:
        """Whether the session's key is still the stored operator key of the same operator; for a
        person, whether their web session is still open."""
        if session.person is not None:
            return await WebSessions(self.redis).person(session.web_cookie) == session.person
        return await self.keyring.operator_name(session.key_digest) == session.operator

    @store_operation
    async def sign_out(self, session: Session) -> None:
        await self.redis.delete(keys.inbox_session(session.cookie_digest))
        logger.info("operator %s signed out of the inbox", session.operator)

    @store_operation
    async def admit_stream(self, session: Session, stream_id: str, now: float) -> bool:
        """Count one more open stream of the operator; ``False`` when they hold the most already."""
        admitted = await self._admit(
            keys=[keys.inbox_streams(session.holder)],
            args=[
                repr(now),
                repr(now + STREAM_LEASE_SECONDS),
                stream_id,
                MAX_STREAMS_PER_OPERATOR,
                2 * STREAM_LEASE_SECONDS,
            ],
        )
        return bool(admitted)

    @store_operation
    async def renew_stream(self, session: Session, stream_id: str, now: float) -> None:
        key = keys.inbox_streams(session.holder)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {stream_id: now + STREAM_LEASE_SECONDS}, xx=True)
            pipe.expire(key, 2 * STREAM_LEASE_SECONDS)
            await pipe.execute()

    @store_operation
    async def release_stream(self, session: Session, stream_id: str) -> None:
        await self.redis.zrem(keys.inbox_streams(session.holder), stream_id)
