"""Leases in Redis: a connection that must be single is held by one process at a time.

Slack's Socket Mode sockets, Discord's Gateway session and Telegram's long poll are connections
humangate opens, so no public URL is needed for them. Any ``serve`` process, and any ``worker``
whose channels include the platform, may hold one; which one does is decided here, never by
configuration:

- A **slot** (``slack:0``, ``slack:1``, ``discord:0``, ``telegram:0``) is a Redis hash holding the
  holder's random token, host, pid, since and last activity, with a TTL of ``LEASE_TTL`` seconds.
  ``ACQUIRE`` creates it only when absent; ``RENEW`` extends it only for the token that holds it;
  ``RELEASE`` deletes it only for that token. Each is one atomic script.
- A holder renews every ``RENEW_INTERVAL`` seconds. When it cannot (Redis cut off, the lease taken
  after a long pause), it stops its connection before its lease could have expired in Redis
  (``local deadline = last renewal + LEASE_TTL - SAFETY_MARGIN``), so two processes never hold the
  same connection at once, whatever the network does.
- Everyone else tries to take a free slot every ``ACQUIRE_INTERVAL`` seconds: a SIGKILLed holder's
  slot expires ``LEASE_TTL`` seconds after its last renewal and is taken at most
  ``ACQUIRE_INTERVAL`` later (``TAKEOVER_BOUND`` in all, within the 15 seconds the docs promise).
  A holder that stops cleanly releases its slots, so the next process takes them within ``ACQUIRE_INTERVAL``.
- Several slots of one platform spread over processes: every process that may hold a platform
  announces itself in the platform's candidates set; a process holding two or more slots releases
  one when some live candidate holds none, so a killed process never takes every socket with it.

A connection is a coroutine function taking a ``Held`` (to report activity); it runs while the
slot is held and is cancelled when it is lost. It should reconnect on its own after a dropped
socket; if it returns or raises, the slot is released and taken again by whoever comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import UNAVAILABLE_ERRORS, text
from gateway.core.tasks import stop_task

logger = logging.getLogger(__name__)

LEASE_TTL = 10.0
"""Seconds a slot stays held in Redis after its holder's last renewal."""

RENEW_INTERVAL = 3.0
"""Seconds between two renewals by the holder (three chances before the TTL runs out)."""

SAFETY_MARGIN = 2.0
"""Seconds before its lease could expire in Redis at which a holder that could not renew closes its
connection: a process that takes the slot over never overlaps with it."""

ACQUIRE_INTERVAL = 2.0
"""Seconds between two attempts of a process to take a free slot."""

TAKEOVER_BOUND = LEASE_TTL + ACQUIRE_INTERVAL
"""Most seconds from a holder's death to another process holding its slot (12 s)."""

OPERATION_TIMEOUT = 2.0
"""Seconds one lease command may take before the attempt counts as failed (Redis cut off)."""

ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'host', ARGV[2], 'pid', ARGV[3],
  'since', ARGV[4], 'activity', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""
"""Take a free slot: KEYS[1] the slot; ARGV token, host, pid, now (s), TTL (ms). 1 when taken."""

RENEW = """
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'activity', ARGV[3]) end
return 1
"""
"""Extend a held slot: ARGV token, TTL (ms), last activity (s, or ''). 0 when no longer ours."""

RELEASE = """
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
"""
"""Give a slot up: ARGV token. 0 when it was not ours (any more)."""

FAILED: tuple[type[Exception], ...] = (TimeoutError, OSError, *UNAVAILABLE_ERRORS)
"""What a lease command raises when Redis cannot answer in time: the attempt failed, try again."""

Connection = Callable[["Held"], Coroutine[Any, Any, None]]
"""Runs one held connection until cancelled (reconnecting by itself after a dropped socket)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a slot, as ``humangate doctor`` shows it."""

    slot: str
    host: str
    pid: int
    since: float
    activity: float


@dataclass(frozen=True)
class LeaseTiming:
    """The seconds a keeper works with (the module's constants; tests shorten them)."""

    ttl: float = LEASE_TTL
    renew: float = RENEW_INTERVAL
    margin: float = SAFETY_MARGIN
    acquire: float = ACQUIRE_INTERVAL

    @property
    def candidate_ttl(self) -> float:
        """Seconds a process stays a candidate after its last look."""
        return 3 * self.acquire


@dataclass
class Held:
    """What a running connection may tell its lease: that something arrived over it."""

    slot: str
    activity: float = field(default_factory=time.time)

    def touch(self) -> None:
        """Record activity now (written to Redis with the next renewal: no command per event)."""
        self.activity = time.time()


def slot_names(platform: str, count: int) -> list[str]:
    """The slots of one platform: ``<platform>:0`` .. ``<platform>:<count-1>``."""
    return [f"{platform}:{index}" for index in range(count)]


async def holders(redis: Redis, platform: str, count: int) -> dict[str, Holder | None]:
    """Who holds each slot of a platform now (None: free)."""
    found: dict[str, Holder | None] = {}
    for slot in slot_names(platform, count):
        fields = {text(k): text(v) for k, v in (await redis.hgetall(keys.lease(slot))).items()}
        if "token" not in fields:
            found[slot] = None
            continue
        found[slot] = Holder(
            slot=slot,
            host=fields.get("host", "?"),
            pid=int(fields.get("pid", "0") or 0),
            since=float(fields.get("since", "0") or 0),
            activity=float(fields.get("activity", "0") or 0),
        )
    return found


class LeaseKeeper:
    """Holds what it can of one platform's slots in this process and runs a connection on each."""

    def __init__(
        self,
        redis: Redis,
        platform: str,
        connect: Connection,
        *,
        slots: int = 1,
        timing: LeaseTiming | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = redis
        self.platform = platform
        self.connect = connect
        self.slots = slot_names(platform, slots)
        self.timing = timing or LeaseTiming()
        self.clock = clock
        self.token = secrets.token_hex(16)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self._acquire = redis.register_script(ACQUIRE)
        self._renew = redis.register_script(RENEW)
        self._release = redis.register_script(RELEASE)
        self._running: dict[str, tuple[asyncio.Task[None], Held, float]] = {}
        """slot -> (its connection's task, its activity, the monotonic time of its last renewal)."""
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def held(self) -> list[str]:
        """The slots this process holds now."""
        return sorted(self._running)

    def start(self) -> None:
        """Start taking and renewing slots in the background."""
        self._task = asyncio.create_task(self._run(), name=f"humangate-lease-{self.platform}")

    async def stop(self) -> None:
        """Stop every connection of this process and release its slots (others take them at once)."""
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
        for slot in list(self._running):
            await self._drop(slot, release=True)
        with contextlib.suppress(*FAILED):
            await asyncio.wait_for(
                self.redis.zrem(keys.lease_candidates(self.platform), self.token), OPERATION_TIMEOUT
            )

    async def _run(self) -> None:
        next_renew = 0.0
        next_acquire = 0.0
        while True:
            now = self.clock()
            if now >= next_renew:
                await self._renew_all()
                next_renew = now + self.timing.renew
            self._drop_overdue()
            if now >= next_acquire:
                await self._acquire_free()
                next_acquire = now + self.timing.acquire
            await self._drop_finished()
            self._drop_overdue()
            delay = max(0.05, min(next_renew, next_acquire) - self.clock())
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _budget(self) -> float:
        """Seconds one Redis call may take now: never past the moment a held connection must close."""
        budget = OPERATION_TIMEOUT
        for _, _, renewed in self._running.values():
            budget = min(budget, renewed + self.timing.ttl - self.timing.margin - self.clock())
        return max(0.01, budget)

    async def _call(self, script: object, slot: str, *args: object) -> int | None:
        """Run one lease script; None when Redis could not answer in time."""
        try:
            result = await asyncio.wait_for(
                script(keys=[keys.lease(slot)], args=list(args)),  # type: ignore[operator]
                self._budget(),
            )
        except FAILED as error:
            logger.warning("lease %s: Redis unavailable (%s)", slot, type(error).__name__)
            return None
        return int(result)

    async def _renew_all(self) -> None:
        ttl_ms = int(self.timing.ttl * 1000)
        for slot in list(self._running):
            task, held, _ = self._running[slot]
            started = self.clock()
            result = await self._call(self._renew, slot, self.token, ttl_ms, f"{held.activity:.3f}")
            self._drop_overdue()
            if slot not in self._running:
                continue
            if result == 1:
                self._running[slot] = (task, held, started)
            elif result == 0:
                logger.warning("lease %s: taken by another process; closing this connection", slot)
                await self._drop(slot, release=False)

    def _drop_overdue(self) -> None:
        """Close a connection whose lease may be about to expire in Redis (renewals failing)."""
        for slot, (task, _, renewed) in list(self._running.items()):
            if self.clock() >= renewed + self.timing.ttl - self.timing.margin and not task.done():
                logger.warning("lease %s: could not renew in time; closing this connection", slot)
                task.cancel()
                del self._running[slot]

    async def _drop_finished(self) -> None:
        for slot, (task, _, _) in list(self._running.items()):
            if task.done():
                error = None if task.cancelled() else task.exception()
                logger.warning("lease %s: connection ended (%r); releasing", slot, error)
                del self._running[slot]
                await self._call(self._release, slot, self.token)

    async def _drop(self, slot: str, *, release: bool) -> None:
        entry = self._running.pop(slot, None)
        if entry is not None:
            with contextlib.suppress(Exception):
                await stop_task(entry[0])
        if release:
            await self._call(self._release, slot, self.token)

    async def _announce(self) -> list[str]:
        """List this process as a candidate; the candidates that hold nothing yet (by token)."""
        candidates = keys.lease_candidates(self.platform)
        now_ms = int(time.time() * 1000)
        try:
            pipe = self.redis.pipeline(transaction=False)
            listed_ms = int(self.timing.candidate_ttl * 1000)
            pipe.zadd(candidates, {self.token: now_ms + listed_ms})
            pipe.zremrangebyscore(candidates, "-inf", now_ms)
            pipe.zrange(candidates, 0, -1)
            pipe.pexpire(candidates, listed_ms)
            for slot in self.slots:
                pipe.hget(keys.lease(slot), "token")
            result = await asyncio.wait_for(pipe.execute(), self._budget())
        except FAILED:
            return []
        live = {text(member) for member in result[2]}
        holding = {text(token) for token in result[4:] if token is not None}
        return sorted(live - holding - {self.token})

    async def _acquire_free(self) -> None:
        idle_others = await self._announce()
        if len(self._running) >= 2 and idle_others:
            # Spread the platform's slots: give one to a process that holds none.
            slot = max(self._running)
            logger.info("lease %s: released for another process (this one holds several)", slot)
            await self._drop(slot, release=True)
            return
        for slot in self.slots:
            if slot in self._running:
                continue
            if self._running and idle_others:
                return  # another process has none: let it take this one
            now = time.time()
            started = self.clock()
            taken = await self._call(
                self._acquire,
                slot,
                self.token,
                self.host,
                self.pid,
                f"{now:.3f}",
                int(self.timing.ttl * 1000),
            )
            if taken == 1:
                held = Held(slot)
                task = asyncio.create_task(self.connect(held), name=f"humangate-connection-{slot}")
                self._running[slot] = (task, held, started)
                logger.info("lease %s: held by this process (%s pid %d)", slot, self.host, self.pid)
                break  # one new slot per look: other processes get their turn
