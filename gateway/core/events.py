"""Hearing, once per process, when Human Functions end or their delivery changes.

Every ending (and every delivery problem) is written to one Redis stream in the same atomic step
as the change itself (``gateway.core.store_scripts``). Each gateway process reads that stream with one
blocking ``XREAD`` on a connection of its own, at least once per poll interval, and wakes the calls
waiting on what changed, handing them the outcome so they read nothing else. That one read is the
process's whole check of Redis: 10,000 waiting calls cost no more commands than one.

Faults: a failed read is retried with backoff on a fresh connection, forever; the reader then
resumes from the last entry it saw, so nothing that happened meanwhile is missed. If the stream
cannot vouch for the gap (Redis lost data, or the gap is older than the stream keeps), the reader
re-reads the state of every request it waits on. Calls never see any of this, beyond being told
in their progress that the store is unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from gateway.core import hush
from gateway.core import redis_keys as keys
from gateway.core.redis_client import COMMAND_TIMEOUT, async_redis, text
from gateway.core.redis_target import RedisTarget
from gateway.core.store import HumanFunctionStore
from gateway.core.tasks import stop_task
from schemas.models import Outcome, Status

logger = logging.getLogger(__name__)

READ_COUNT = 1000
"""Most stream entries one read takes (a burst of answers is handed over in a few reads)."""

RECENT_LIMIT = 20_000
"""Endings remembered after they were read, so a call that starts watching just after its request
ended (a re-attach racing an answer) still hears of it at once."""

RECONNECT_DELAYS = (0.1, 0.25, 0.5)
"""Seconds between attempts to read again after a failure (the last one repeats: one cheap attempt
every half second, so a Redis that comes back is heard within about half a second)."""

RECONCILE_INTERVAL = 120.0
"""Seconds between two re-reads of every watched request's state even when nothing went wrong: a
safety net that costs at most one command per waiting call per two minutes."""

RECONCILE_CHUNK = 500
"""Requests whose state one pipelined round trip re-reads (about 10-25 ms of the loop's time)."""

RECONCILE_OVERDUE = 2 * RECONCILE_INTERVAL
"""The regular re-read yields to answers being handed over (``gateway.core.hush``: at 10,000 waiting
calls it is about half a second of the loop's time), but not past this many seconds."""


def _resolve(future: asyncio.Future[bool], woken: bool) -> None:
    if not future.done():
        future.set_result(woken)


class Waiter:
    """One waiting call's view of its Human Function: ended or not, and its delivery note."""

    __slots__ = ("_wake", "deadline", "ended", "escalated", "hf_id", "note", "started")

    def __init__(self, hf_id: str, note: str | None, deadline: float) -> None:
        self.hf_id = hf_id
        self.ended: Outcome | None = None
        self.note = note
        self.deadline = deadline
        self.started = False
        """A person started answering (and the request got its full deadline)."""
        self.escalated: str | None = None
        """Which escalation steps posted (``escalated to teams after 2 minutes``), if any."""
        self._wake: asyncio.Future[bool] | None = None

    async def sleep(self, seconds: float) -> bool:
        """Return after ``seconds``, or as soon as the request ends or changes (one timer, no task).
        Returns whether it was woken before ``seconds`` passed."""
        if self.ended is not None:
            return True
        loop = asyncio.get_running_loop()
        self._wake = loop.create_future()
        timer = loop.call_later(seconds, _resolve, self._wake, False)
        try:
            return await self._wake
        finally:
            timer.cancel()
            self._wake = None

    def end(self, outcome: Outcome) -> None:
        if self.ended is None:
            self.ended = outcome
        self.wake()

    def wake(self) -> None:
        if self._wake is not None:
            _resolve(self._wake, True)


def _id_tuple(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


async def newest_event_id(redis: Redis) -> str:
    """The id of the newest entry of the events stream, where a reader starts (``0-0`` when empty)."""
    newest = await redis.xrevrange(keys.EVENTS, count=1)
    return text(newest[0][0]) if newest else "0-0"


class Events:
    """The process's one reader of the events stream and its registry of waiting calls."""

    def __init__(
        self,
        target: RedisTarget | str,
        store: HumanFunctionStore,
        poll_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # Its own connection: a blocking read must never wait behind (or hold up) other commands.
        self._redis: Redis = async_redis(target, socket_timeout=poll_interval + COMMAND_TIMEOUT, pool_size=2)
        self._store = store
        self._block_ms = max(1, int(poll_interval * 1000))
        self._clock = clock
        self._waiting: dict[str, list[Waiter]] = {}
        self._recent: OrderedDict[str, bytes] = OrderedDict()
        self._position: str | None = None
        self._gap = False
        self._last_reconcile = clock()
        self._unchecked: list[str] = []
        """Watched requests the regular re-read has yet to check (it pauses while answers are
        being handed over)."""
        self._task: asyncio.Task[None] | None = None
        self.available = True
        """Whether the last read of the stream worked (progress messages say so when not)."""
        self.reading = asyncio.Event()
        """Set while the reader is connected and reading (tests wait for it)."""
        self.stopping = False
        """The process is shutting down: waiting calls end now (their requests stay pending)."""
        self.hush = hush.PROCESS
        """Busy while endings are being handed over: progress ticks wait for the quiet."""

    def watch(self, hf_id: str, deadline: float, note: str | None = None) -> Waiter:
        """Start waiting on ``hf_id``; pair with ``unwatch`` in a ``finally``."""
        waiter = Waiter(hf_id, note, deadline)
        self._waiting.setdefault(hf_id, []).append(waiter)
        outcome = self._recent.get(hf_id)
        if outcome is not None:
            waiter.end(Outcome.model_validate_json(outcome))
        return waiter

    def unwatch(self, waiter: Waiter) -> None:
        waiters = self._waiting.get(waiter.hf_id)
        if waiters is not None:
            with contextlib.suppress(ValueError):
                waiters.remove(waiter)
            if not waiters:
                del self._waiting[waiter.hf_id]

    def release_all(self) -> None:
        """Wake every waiting call for good: the process is stopping."""
        self.stopping = True
        for waiters in self._waiting.values():
            for waiter in waiters:
                waiter.wake()

    @property
    def waiting(self) -> int:
        """How many calls wait right now."""
        return sum(len(waiters) for waiters in self._waiting.values())

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="humangate-events")

    async def stop(self) -> None:
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
        await self._redis.aclose()

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                if self._position is None:
                    self._position = await newest_event_id(self._redis)
                if self._gap:
                    await self._catch_up()
                self.reading.set()
                reply: Any = await self._redis.xread(
                    {keys.EVENTS: self._position}, count=READ_COUNT, block=self._block_ms
                )
                if failures:
                    logger.info("events stream readable again after %d failed reads", failures)
                    await self._drop_idle_connections()
                failures, self.available = 0, True
                for _stream, entries in reply or []:
                    for entry_id, fields in entries:
                        self._position = text(entry_id)
                        self._apply(fields)
                await self._recheck()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.reading.clear()
                self.available, self._gap = False, True
                if failures == 0:
                    logger.warning(
                        "events stream unreadable (%s: %s); waiting calls keep waiting, retrying",
                        type(exc).__name__,
                        exc,
                    )
                    await self._drop_idle_connections()
                failures += 1
                await asyncio.sleep(RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS)) - 1])

    async def _drop_idle_connections(self) -> None:
        """When an outage is noticed and when it ends, close the store's idle pooled connections: ones
        opened before it may be dead without knowing it (a blackholed or restarted Redis), and the
        next command on each would wait out its socket timeout. New ones are opened on demand."""
        try:
            await self._store.redis.connection_pool.disconnect(inuse_connections=False)
        except Exception as exc:  # closing a dead socket may fail; it is gone either way
            logger.debug("closing idle connections after an outage: %s", exc)

    async def _catch_up(self) -> None:
        """After a failure: resume from the stream if it still holds everything since the last entry
        read; otherwise re-read the state of every watched request."""
        try:
            info = await self._redis.xinfo_stream(keys.EVENTS)
        except Exception as exc:
            if "no such key" not in str(exc).lower():
                raise
            info = None
        assert self._position is not None
        position = _id_tuple(self._position)
        if info is None:
            complete, self._position = False, "0-0"
        else:
            newest = _id_tuple(text(info["last-generated-id"]))
            first = info.get("first-entry")
            oldest = _id_tuple(text(first[0])) if first else newest
            if newest < position:  # Redis lost entries we had read: start over from what it has.
                complete, self._position = False, text(info["last-generated-id"])
            else:
                complete = oldest <= position or newest == position
        if not complete:
            logger.warning("events stream has a gap; re-reading %d waiting requests", len(self._waiting))
            await self._reconcile()
        self._gap = False

    async def _recheck(self) -> None:
        """The regular re-read of every watched request (a safety net), a chunk at a time while the
        process is quiet: it stops when answers come and goes on after them."""
        since = self._clock() - self._last_reconcile
        if not self._unchecked and self._waiting and since > RECONCILE_INTERVAL:
            self._last_reconcile = self._clock()
            self._unchecked = list(self._waiting)
            since = 0.0
        while self._unchecked and (self.hush.left() == 0 or since > RECONCILE_OVERDUE):
            chunk, self._unchecked = self._unchecked[:RECONCILE_CHUNK], self._unchecked[RECONCILE_CHUNK:]
            await self._reread(chunk)

    async def _reconcile(self) -> None:
        """Re-read the state of every watched request now and settle those that ended."""
        self._last_reconcile = self._clock()
        ids, self._unchecked = list(self._waiting), []
        for start in range(0, len(ids), RECONCILE_CHUNK):
            await self._reread(ids[start : start + RECONCILE_CHUNK])

    async def _reread(self, ids: list[str]) -> None:
        states = await self._store.states(ids)
        for hf_id, (status, outcome, note) in states.items():
            for waiter in self._waiting.get(hf_id, ()):
                waiter.note = note
            if status is not None and status is not Status.PENDING and outcome is not None:
                self._settle(hf_id, outcome.encode())

    def _apply(self, fields: dict[bytes, bytes]) -> None:
        hf_id = text(fields.get(b"id", b""))
        if b"outcome" in fields:
            self._settle(hf_id, fields[b"outcome"])
        elif b"note" in fields:
            note = text(fields[b"note"]) or None
            for waiter in self._waiting.get(hf_id, ()):
                waiter.note = note
        elif b"escalated" in fields:
            escalated = text(fields[b"escalated"])
            for waiter in self._waiting.get(hf_id, ()):
                waiter.escalated = escalated
                waiter.wake()  # tell the agent now: its request reached more people
        elif b"deadline" in fields:
            deadline = float(fields[b"deadline"])
            for waiter in self._waiting.get(hf_id, ()):
                waiter.deadline, waiter.started = deadline, True
                waiter.wake()  # tell the agent now: the person is answering

    def _settle(self, hf_id: str, outcome: bytes) -> None:
        self.hush.busy()
        self._recent[hf_id] = outcome
        if len(self._recent) > RECENT_LIMIT:
            self._recent.popitem(last=False)
        waiters = self._waiting.get(hf_id)
        if waiters:
            # Parsed only for a request someone here waits on: most events are for other processes.
            ended = Outcome.model_validate_json(outcome)
            for waiter in waiters:
                waiter.end(ended)
