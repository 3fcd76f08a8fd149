"""What a person typed in a Human Function's form on a platform, kept between modals
(``channels.base.Drafts``, handed to a channel through its desk).

Discord cannot answer a modal with another modal, and a modal forgets its values when it closes. So
the texts of each step of a long form, and of an answer refused as invalid, are kept here per
(request, user) until the request's deadline: the next step adds to them, and "Fix my answer"
reopens the modal filled with them. (Only Discord uses them today, hence the key's name.)
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from schemas.models import HumanFunction

logger = logging.getLogger(__name__)

MIN_DRAFT_SECONDS = 60
"""A draft is kept at least this long, so one saved just before the deadline is still readable."""


class Drafts:
    """Form texts by (Human Function, Discord user): field name -> submitted strings."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def load(self, hf_id: str, user_id: str) -> dict[str, list[str]]:
        raw = await self.redis.get(keys.discord_draft(hf_id, user_id))
        if raw is None:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            logger.warning("unreadable draft dropped hf=%s channel=discord", hf_id)
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): [str(v) for v in vs] for k, vs in data.items() if isinstance(vs, list)}

    async def save(self, hf: HumanFunction, user_id: str, values: Mapping[str, list[str]]) -> None:
        ttl = max(MIN_DRAFT_SECONDS, math.ceil(hf.deadline - time.time()))
        await self.redis.set(keys.discord_draft(hf.id, user_id), json.dumps(dict(values)), ex=ttl)

    async def drop(self, hf_id: str, user_id: str) -> None:
        await self.redis.delete(keys.discord_draft(hf_id, user_id))
