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


POSITION_TTL = 7 * 24 * 3600
"""Seconds a channel's read position is kept after its last move (a week: Telegram keeps an
unconfirmed update one day, and restarts its update ids after a week without any)."""


async def seen_before(redis: Redis, channel: str, signature: str | bytes) -> bool:
    """Whether ``first_delivery`` already claimed ``signature`` on ``channel`` (claims nothing): a
    channel that marks a callback applied only once it is, checks first with this."""
    return bool(await redis.exists(keys.seen_callback(channel, _digest(signature))))


async def position(redis: Redis, channel: str, stream: str) -> int | None:
    """How far ``channel`` has read ``stream`` (``advance``); ``None`` when never recorded."""
    raw = await redis.get(keys.channel_position(channel, stream))
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


async def advance(redis: Redis, channel: str, stream: str, value: int) -> None:
    """Record that ``channel`` has read ``stream`` up to ``value`` (the next item it wants)."""
    await redis.set(keys.channel_position(channel, stream), str(value), ex=POSITION_TTL)


def _digest(signature: str | bytes) -> str:
    material = signature.encode() if isinstance(signature, str) else signature
    return hashlib.sha256(material).hexdigest()


async def first_delivery(redis: Redis, channel: str, signature: str | bytes, window_seconds: int) -> bool:
    """True the first time ``signature`` is seen on ``channel`` within the window, False on a replay."""
    key = keys.seen_callback(channel, _digest(signature))
    claimed = await redis.set(key, b"1", nx=True, ex=window_seconds + REPLAY_MARGIN_SECONDS)
    return bool(claimed)
