"""Stopping a background task that may be inside a Redis read.

A task blocked in a redis-py read can lose a single ``cancel()``: the cancellation arrives as the
read finishes, the client turns it into a failed read and retries, and the task reads again for
its full socket timeout. So a stop cancels again until the task has really ended.
"""

from __future__ import annotations

import asyncio
import contextlib

CANCEL_EVERY = 0.2
"""Seconds between cancellations of a task that has not ended yet."""


async def stop_task(task: asyncio.Task[object] | asyncio.Task[None]) -> None:
    """Cancel ``task`` until it has ended, then wait for it (its cancellation is not an error)."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_EVERY)
    with contextlib.suppress(asyncio.CancelledError):
        await task
