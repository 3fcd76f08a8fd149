"""Answering a platform within its deadline, however long recording the answer takes.

Discord drops an interaction not answered within 3 seconds, Teams a card action within 5. A
handler gives its work a ``budget``: if the work is done, its reply goes back in the HTTP response;
if not, the platform gets ``fallback`` at once and the work goes on in the background, its reply
handed to ``late`` when done (Discord sends it through the interaction's webhook; Teams shows the
outcome through the usual update and needs no ``late``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

logger = logging.getLogger(__name__)

Reply = dict[str, Any]
"""A platform's JSON reply to one callback."""

_running: set[asyncio.Task[Any]] = set()
"""Work still running after its budget, referenced so it is not garbage-collected while it runs."""


async def within_budget(
    work: Coroutine[Any, Any, Reply],
    *,
    budget: float,
    fallback: Reply,
    late: Callable[[Reply], Awaitable[None]] | None = None,
    channel: str,
    label: str = "",
) -> Reply:
    """``work``'s reply if it comes within ``budget`` seconds; else ``fallback``, and ``late(reply)``
    once the work is done (a failure of either is logged, never raised)."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=budget)
    if task in done:
        return task.result()
    logger.warning("answering took over %.1f s %s channel=%s; the reply comes later", budget, label, channel)

    async def finish() -> None:
        try:
            reply = await task
            if late is not None:
                await late(reply)
        except Exception:
            logger.exception("late reply failed %s channel=%s", label, channel)

    background = asyncio.create_task(finish(), name=f"humangate-{channel}-late-reply")
    _running.add(background)
    background.add_done_callback(_running.discard)
    return fallback
