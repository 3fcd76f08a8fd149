"""The connections this process may hold to the platforms, each under its lease (docs/slack.md).

Every ``serve`` process, and every ``worker`` whose channels include a platform, runs one
``LeaseKeeper`` per ``Opening`` of each configured channel: the keeper takes what slots it can and
runs the channel's connection on each with the channel's ``Desk`` (``gateway.desk``), so a click read
from a socket is answered by the same code, through the same service, as a click on an endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Any

from channels.base import Channel, Opening
from channels.registry import CHANNELS
from gateway.core.lease import Held, LeaseKeeper
from gateway.desk import RuntimeDesk
from gateway.runtime import Runtime, open_runtime
from schemas.settings import Settings

logger = logging.getLogger(__name__)

STOP_TIMEOUT = 10.0
"""Seconds a worker waits for its connections to close and release their leases when it stops."""


def openings_of(settings: Settings, names: Iterable[str]) -> list[tuple[Channel, Opening]]:
    """The connections the configured channels among ``names`` open with these settings."""
    found: list[tuple[Channel, Opening]] = []
    for name in names:
        channel = CHANNELS.get(name)
        if channel is None or channel.missing_settings(settings):
            continue
        found.extend((channel, opening) for opening in channel.openings(settings))
    return found


def _connection(opening: Opening, desk: RuntimeDesk) -> Callable[[Held], Coroutine[Any, Any, None]]:
    async def run(held: Held) -> None:
        await opening.run(held, desk)

    return run


@contextlib.asynccontextmanager
async def held_openings(runtime: Runtime, names: Iterable[str]) -> AsyncIterator[list[LeaseKeeper]]:
    """Keep the leases of the connections of channels ``names`` while inside; release them on exit
    (another process then takes them at its next attempt)."""
    keepers = [
        LeaseKeeper(
            runtime.redis,
            opening.platform,
            _connection(opening, RuntimeDesk(runtime, channel.name)),
            slots=opening.slots,
        )
        for channel, opening in openings_of(runtime.settings, names)
    ]
    for keeper in keepers:
        keeper.start()
        logger.info("connections of %s: this process may hold them", keeper.platform)
    try:
        yield keepers
    finally:
        for keeper in keepers:
            await keeper.stop()


class WorkerOpenings:
    """A worker's connections, on an event loop of their own in a daemon thread (RQ's jobs run in
    the main thread): a gateway runtime of its own, the desks and the lease keepers."""

    def __init__(self, settings: Settings, names: Iterable[str]) -> None:
        self.settings = settings
        self.names = list(names)
        self._loop = asyncio.new_event_loop()
        self._stopping = asyncio.Event()  # bound to the thread's loop on first use
        self._thread = threading.Thread(target=self._run, name="humangate-connections", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Close the connections and release their leases (bounded by ``STOP_TIMEOUT``)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(STOP_TIMEOUT)

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._hold())
        except Exception:
            logger.exception("the worker's platform connections stopped")
        finally:
            self._loop.close()

    async def _hold(self) -> None:
        async with open_runtime(self.settings) as runtime, held_openings(runtime, self.names):
            await self._stopping.wait()


def start_worker_openings(settings: Settings, names: Iterable[str]) -> WorkerOpenings | None:
    """Start a worker's connections when one of its channels opens any (else ``None``)."""
    names = list(names)
    if not openings_of(settings, names):
        return None
    openings = WorkerOpenings(settings, names)
    openings.start()
    return openings
