"""The wait of one call for its Human Function to end: poll Redis, wake early on pub/sub."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.service import HumanFunctionService
from gateway.wakeups import Wakeups
from schemas.errors import ClosedError, UnknownRequestError
from schemas.models import HumanFunction


@dataclass(frozen=True, slots=True)
class Tick:
    """What a waiting call reports at each check (an MCP progress notification)."""

    hf: HumanFunction
    seconds_left: float
    delivery_error: str | None


OnTick = Callable[[Tick], Awaitable[None]]


async def wait_for_end(
    service: HumanFunctionService, wakeups: Wakeups, hf: HumanFunction, on_tick: OnTick
) -> HumanFunction:
    """Wait until ``hf`` ends (answered, expired or withdrawn) and return it as it ended.

    Checks Redis every poll interval and whenever the shared subscription says ``hf`` ended; at
    the deadline it expires ``hf`` itself (the reaper does the same for calls nobody waits on).
    Cancelling this coroutine (client gone) leaves ``hf`` pending for a later re-attach.
    """
    store = service.store
    poll_interval = service.settings.poll_interval
    wake = wakeups.watch(hf.id)
    try:
        while True:
            wake.clear()
            status, delivery_error = await store.poll(hf.id)
            if status is None:
                raise UnknownRequestError(f"request {hf.id} is gone (its keys expired)")
            if not status.is_terminal:
                now = service.clock()
                left = hf.deadline - now
                if left <= 0:
                    with contextlib.suppress(ClosedError):
                        return await service.expire(hf.id)
                    return await store.get(hf.id)
                await on_tick(Tick(hf, left, delivery_error))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=min(poll_interval, left))
                continue
            return await store.get(hf.id)
    finally:
        wakeups.unwatch(hf.id, wake)
