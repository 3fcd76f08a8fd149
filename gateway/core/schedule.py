"""Work due later, in Redis: escalation steps, reminders, or any job a worker must start at a time
(docs/escalation.md#the-schedule).

One sorted set (``redis_keys.SCHEDULE``) holds ``<kind>:<id>:<arg>`` -> due time. Entries are added
by the same atomic step that creates what they belong to (``add_commands``, run by the store's
create script) or later (``add``). Every worker looks at its soonest entry (one ``ZRANGE``) every
``POLL_INTERVAL``, or sooner when that entry is due sooner (nothing else while nothing is due).
When some are due it claims a batch (``CLAIM``: they move ``CLAIM_LEASE`` seconds later, so other
workers take other entries), builds the commands that queue each one's RQ job and runs ``FIRE``,
which for each entry, atomically:

1. removes it (``ZREM``): only the first worker to get there goes on, so an entry fires once;
2. checks its guard, the hash of what it belongs to, still has ``status`` ``pending`` (an entry of
   a request that ended is dropped: nothing fires after the end);
3. runs the commands (queue its RQ job; set a marker in the hash).

Nothing lives only in a process: a stopped worker's due entries wait in Redis for the next one,
and once fired the job is RQ's (its retries, and the recovery of ``workers.recovery`` if the worker
running it dies). So an entry due while every process was stopped fires once, after the restart.

A kind's handler (``Handler``) says what firing an entry means; workers register theirs
(``workers.scheduling``). The API for another kind (webhook retries, say): pick a kind name, call
``add`` / ``add_commands`` with ``Entry(kind, id, arg)`` and a due time, and register a handler
returning ``Firing(guard="", commands=<the RQ enqueue commands>)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis import Redis as SyncRedis
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.queue import Command, flatten
from gateway.core.redis_client import text
from gateway.core.store_scripts import RUN_COMMANDS

POLL_INTERVAL = 0.25
"""Most seconds between two looks at the schedule by one worker: a worker that sees the soonest entry
due sooner looks again right then, so an entry known at a look fires on time and one added later
waits at most this long after it is due (plus the moment its job waits in its queue)."""

FIRE_BATCH = 200
"""Most due entries one look claims and fires (the next look follows at once while more are due)."""

CLAIM_LEASE = 30.0
"""Seconds a worker has to fire the entries it claimed; a worker that died in between leaves them
due again that much later, for another worker."""

CLAIM = """
local known = {}
for i = 4, #ARGV do known[ARGV[i]] = true end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local claimed = {}
for _, member in ipairs(due) do
  if known[string.match(member, '^([^:]*):')] then
    redis.call('ZADD', KEYS[1], 'XX', ARGV[2], member)
    claimed[#claimed + 1] = member
  end
end
return {#due, claimed}
"""
"""Claim due entries of the kinds this worker knows (``ARGV[4:]``): each is moved to the lease's end
(``ARGV[2]``), so no other worker takes it meanwhile. Returns how many were due (up to the batch,
``ARGV[3]``) and the members claimed. Workers build the commands of only what they claimed, so two
workers never do the same work."""

FIRE = (
    RUN_COMMANDS
    + """
local fired = {}
local i = 1
while i <= #ARGV do
  local member, guard, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local from = i + 3
  if redis.call('ZREM', KEYS[1], member) == 1
     and (guard == '' or redis.call('HGET', guard, 'status') == 'pending') then
    run_commands(ARGV, from, from + n - 1)
    fired[#fired + 1] = member
  end
  i = from + n
end
return fired
"""
)
"""Fire due entries: ``ARGV`` holds, per entry, its member, its guard (a hash key, or empty), the
number of arguments that follow, and its commands as ``queue.flatten`` writes them. Returns the
members fired (others were taken by another worker, or their guard had ended)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing due later: its kind (``step``), what it is about (a request id) and an argument."""

    kind: str
    ref: str
    arg: str = ""

    @property
    def member(self) -> str:
        return f"{self.kind}:{self.ref}:{self.arg}"

    @classmethod
    def of(cls, member: str) -> Entry:
        kind, ref, arg = member.split(":", 2)
        return cls(kind, ref, arg)


@dataclass(frozen=True, slots=True)
class Firing:
    """What firing one entry does: the hash that must still be pending (``""``: none) and the commands
    to run atomically with the claim (queueing its job)."""

    guard: str
    commands: list[Command]


Handler = Callable[[Entry], Firing | None]
"""What an entry of one kind does when it fires; ``None`` drops it."""


def add_commands(entry: Entry, due: float) -> list[Command]:
    """The command that schedules ``entry`` at ``due``, for a script that runs recorded commands."""
    return [("ZADD", keys.SCHEDULE, repr(due), entry.member)]


async def add(redis: Redis, entries: list[tuple[Entry, float]]) -> None:
    """Schedule ``entries`` (entry, due time); scheduling one again moves it to the new time."""
    if entries:
        await redis.zadd(keys.SCHEDULE, {entry.member: due for entry, due in entries})


class Schedule:
    """One worker's side of the schedule (synchronous: it runs in a worker's thread)."""

    def __init__(self, connection: SyncRedis, handlers: dict[str, Handler]) -> None:
        self.connection = connection
        self.handlers = handlers
        self._fire = connection.register_script(FIRE)
        self._claim = connection.register_script(CLAIM)

    def next_due(self) -> float | None:
        """When the soonest entry is due (``None``: none is scheduled); one command, all a worker
        sends while nothing is due."""
        rows = self.connection.zrange(keys.SCHEDULE, 0, 0, withscores=True)
        return float(rows[0][1]) if rows else None

    def claim(self, now: float, limit: int = FIRE_BATCH) -> tuple[int, list[Entry]]:
        """Claim up to ``limit`` due entries of known kinds for ``CLAIM_LEASE`` seconds; how many
        were due, and the entries claimed."""
        args: list[str | int] = [repr(now), repr(now + CLAIM_LEASE), limit, *self.handlers]
        due, members = self._claim(keys=[keys.SCHEDULE], args=args)
        return int(due), [Entry.of(text(m)) for m in members]

    def fire_due(self, now: float) -> list[Entry]:
        """Fire what is due at ``now`` (all of it, batch after batch); returns the entries this worker
        fired."""
        soonest = self.next_due()
        return [] if soonest is None or soonest > now else self.fire_all(now)

    def fire_all(self, now: float) -> list[Entry]:
        """Claim and fire batch after batch of what is due at ``now``, without looking first."""
        fired: list[Entry] = []
        while True:
            due, claimed = self.claim(now)
            fired += self.fire(claimed)
            if due < FIRE_BATCH or not claimed:
                return fired

    def fire(self, entries: list[Entry]) -> list[Entry]:
        """Fire ``entries`` in one atomic step each (see the module docstring)."""
        args: list[Any] = []
        for entry in entries:
            handler = self.handlers.get(entry.kind)
            if handler is None:
                continue  # a kind this worker does not know is left for one that does
            firing = handler(entry)
            flat = flatten(firing.commands) if firing is not None else []
            args += [entry.member, firing.guard if firing is not None else "", len(flat), *flat]
        if not args:
            return []
        members = self._fire(keys=[keys.SCHEDULE], args=args)
        return [Entry.of(text(m)) for m in members]
