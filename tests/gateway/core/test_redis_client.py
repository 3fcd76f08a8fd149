"""The Redis clients every process opens (``gateway.core.redis_client``), against real Redis."""

from __future__ import annotations

import asyncio
import time

from gateway.core.redis_client import COMMAND_TIMEOUT, POOL_WAIT, async_redis, store_operation


async def test_a_command_queued_behind_a_busy_pool_waits_longer_than_one_command_may_take(
    redis_url: str,
) -> None:
    # A burst on a loaded machine can hold every pooled connection for longer than one command's
    # timeout; the queued command still runs, within its operation's deadline (issue 30: answers
    # were refused with "No connection available" under a 10,000-call load).
    client = async_redis(redis_url, pool_size=1)
    held = await client.connection_pool.get_connection()  # type: ignore[no-untyped-call]
    hold = COMMAND_TIMEOUT + 0.5
    assert hold < POOL_WAIT

    async def release_later() -> None:
        await asyncio.sleep(hold)  # the "burst" keeps the only connection this long
        await client.connection_pool.release(held)

    @store_operation
    async def ping() -> bool:
        return bool(await client.ping())

    releasing = asyncio.create_task(release_later())
    started = time.monotonic()
    try:
        assert await ping()
        assert time.monotonic() - started >= hold - 0.1  # it did queue behind the held connection
    finally:
        await releasing
        await client.aclose()
