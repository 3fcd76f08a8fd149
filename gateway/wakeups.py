"""Waking waiting calls when their Human Function ends.

Redis is the source of truth and every waiting call checks it at least once per poll interval. On
top of that, one pub/sub subscription per process (not one per call) hears the id of every ended
Human Function and wakes the calls waiting on it at once, so an answer reaches the agent in far
less than a second. A lost wake-up (a dropped connection, a restart) costs at most one poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict

from redis.asyncio import Redis

from gateway import redis_keys as keys

logger = logging.getLogger(__name__)

RECONNECT_DELAY = 1.0
"""Seconds before re-subscribing after the pub/sub connection failed (polls cover the gap)."""


class Wakeups:
    """Per-process registry of waiting calls, fed by one shared subscription to ``hg:events``."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._waiting: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()

    def watch(self, hf_id: str) -> asyncio.Event:
        """An event set when ``hf_id`` ends; pair with ``unwatch`` in a ``finally``."""
        event = asyncio.Event()
        self._waiting[hf_id].add(event)
        return event

    def unwatch(self, hf_id: str, event: asyncio.Event) -> None:
        events = self._waiting.get(hf_id)
        if events is not None:
            events.discard(event)
            if not events:
                del self._waiting[hf_id]

    @property
    def waiting(self) -> int:
        return sum(len(events) for events in self._waiting.values())

    def notify(self, hf_id: str) -> None:
        for event in self._waiting.get(hf_id, ()):
            event.set()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="humangate-wakeups")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _listen(self) -> None:
        while True:
            try:
                async with self.redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(keys.EVENTS)
                    self.subscribed.set()
                    async for message in pubsub.listen():
                        data = message.get("data")
                        if isinstance(data, bytes | str):
                            self.notify(data.decode() if isinstance(data, bytes) else data)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.subscribed.clear()
                logger.warning("wake-up subscription lost (%s); polling covers it, retrying", exc)
                await asyncio.sleep(RECONNECT_DELAY)
