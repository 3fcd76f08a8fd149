"""Applying each signed platform callback once.

A signature proves who sent a callback and when, not that it is new: anyone who captured one can send
it again while its timestamp is still fresh, and platforms themselves retry. The first delivery of a
signature claims a Redis key (``SET NX``) that outlives the platform's freshness window; a repeat
finds it taken and is acknowledged without being applied. Answers are first-wins anyway, so this
guards the side effects around them (modals, ephemeral notes, second updates).
"""

from __future__ import annotations

import hashlib

from redis.asyncio import Redis

from gateway.core import redis_keys as keys

REPLAY_MARGIN_SECONDS = 60
"""Kept past the freshness window, so clock skew between platform and gateway cannot reopen it."""


async def first_delivery(redis: Redis, channel: str, signature: str | bytes, window_seconds: int) -> bool:
    """True the first time ``signature`` is seen on ``channel`` within the window, False on a replay."""
    material = signature.encode() if isinstance(signature, str) else signature
    digest = hashlib.sha256(material).hexdigest()
    claimed = await redis.set(
        keys.seen_callback(channel, digest), b"1", nx=True, ex=window_seconds + REPLAY_MARGIN_SECONDS
    )
    return bool(claimed)
