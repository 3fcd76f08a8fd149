"""Expiring overdue Human Functions nobody waits on, within about a second of their deadline.

Every gateway process runs one reaper; their passes may overlap harmlessly, since each request is
ended once by the store's script. One pass ends every overdue request, however many, in batches
of ``REAP_BATCH`` per round trip, and queues the updates of their messages in one more.
"""

from __future__ import annotations

import asyncio
import logging

from gateway.core.service import HumanFunctionService
from schemas.errors import StoreUnavailableError

logger = logging.getLogger(__name__)

REAP_INTERVAL = 1.0
"""Seconds between two reaper passes: an overdue request ends at most this long after its deadline."""


async def reap_forever(service: HumanFunctionService, interval: float = REAP_INTERVAL) -> None:
    """Run reaper passes until cancelled; an unreachable Redis is logged once per outage."""
    unavailable = False
    while True:
        try:
            await service.reap()
            if unavailable:
                logger.info("reaper: Redis is back")
            unavailable = False
        except StoreUnavailableError as exc:
            if not unavailable:
                logger.warning("reaper: Redis is unavailable (%s); retrying every %.0f s", exc, interval)
            unavailable = True
        except Exception:
            logger.exception("reaper pass failed; retrying next interval")
        await asyncio.sleep(interval)
