"""Noting, in the background and in batches, that calls returned people's answers.

A result a live client received must not be handed to the next identical call (a kept answer lives
only until some call returns it); one that reached no client stays kept for that call
(``gateway.mcp.delivery`` tells which). Writing that down is never allowed to delay the result
itself, nor to cost one round trip per answer under a burst: marks are queued here and written a
few at a time by one task. A mark lost to a crash only means an identical call gets the same answer
once more: never a lost answer (docs/human-functions.md#re-attaching).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from gateway.core.store import HumanFunctionStore
from gateway.core.tasks import stop_task
from schemas.errors import StoreUnavailableError

logger = logging.getLogger(__name__)

BATCH_DELAY = 0.02
"""Seconds the writer waits after a first mark, so a burst of answers becomes one round trip."""

RETRY_DELAY = 1.0
"""Seconds before the writer tries again while Redis is unavailable."""

MAX_PENDING = 100_000
"""Most marks kept while Redis is unavailable (past that, the oldest are dropped)."""


class ReturnedMarks:
    """The process's queue of results returned to calls, and its writer task."""

    def __init__(self, store: HumanFunctionStore) -> None:
        self._store = store
        self._pending: dict[str, bool] = {}
        """Each queued id: True to mark it returned, False to release it (latest wins)."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def mark(self, hf_id: str) -> None:
        """Note that a call returned ``hf_id``'s answer (written within ``BATCH_DELAY``)."""
        self._queue(hf_id, True)

    def release(self, hf_id: str) -> None:
        """Note that the kept answer of ``hf_id``, handed to a call, reached no client: the next
        identical call gets it (written within ``BATCH_DELAY``)."""
        self._queue(hf_id, False)

    def _queue(self, hf_id: str, returned: bool) -> None:
        self._pending.pop(hf_id, None)  # the latest note goes last
        self._pending[hf_id] = returned
        if len(self._pending) > MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="humangate-returned")

    async def stop(self) -> None:
        """Write what is queued (best effort), then stop."""
        if self._task is not None:
            await stop_task(self._task)
        with contextlib.suppress(StoreUnavailableError):
            await self._flush()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(BATCH_DELAY)  # gather the rest of a burst into this round trip
            self._wake.clear()
            try:
                await self._flush()
            except StoreUnavailableError as exc:
                logger.warning("could not note %d returned result(s), retrying: %s", len(self._pending), exc)
                await asyncio.sleep(RETRY_DELAY)
                self._wake.set()

    async def _flush(self) -> None:
        batch = dict(self._pending)
        if batch:
            await self._store.note_returned(
                [hf_id for hf_id, returned in batch.items() if returned],
                [hf_id for hf_id, returned in batch.items() if not returned],
            )
            for hf_id, returned in batch.items():
                if self._pending.get(hf_id) is returned:  # not noted again meanwhile
                    self._pending.pop(hf_id)
