"""Each signed callback is applied once: replays inside the window are recognised."""

from __future__ import annotations

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.replay import REPLAY_MARGIN_SECONDS, first_delivery


async def test_a_signature_is_applied_once_per_channel_and_forgotten_after_the_window(redis_url: str) -> None:
    async with Redis.from_url(redis_url) as redis:
        assert await first_delivery(redis, "slack", "v0=abc", 300)
        assert not await first_delivery(redis, "slack", "v0=abc", 300)
        assert not await first_delivery(redis, "slack", b"v0=abc", 300)  # bytes or text, one signature
        assert await first_delivery(redis, "slack", "v0=abd", 300)
        assert await first_delivery(redis, "discord", "v0=abc", 300)
        seen = [key async for key in redis.scan_iter(match=keys.seen_callback("slack", "*"))]
        assert len(seen) == 2
        ttl = await redis.ttl(seen[0])
        assert 300 < ttl <= 300 + REPLAY_MARGIN_SECONDS
