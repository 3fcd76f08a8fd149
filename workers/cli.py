"""``humangate worker``: RQ workers on the channels' queues, as separate processes."""

from __future__ import annotations

import logging
import sys

from channels.registry import channel_names, configured_channels
from gateway.core.local import running_embedded_url
from gateway.core.policies import startup_policies
from gateway.core.redis_target import RedisTarget
from schemas.settings import get_settings, override_settings
from workers.rq_worker import run_worker

logger = logging.getLogger(__name__)


def run_workers(channels_arg: str | None, *, burst: bool) -> int:
    settings = get_settings()
    if not settings.external_redis:
        url = running_embedded_url(settings.data_dir)
        if url is None:
            sys.stderr.write(
                "humangate worker: set HUMANGATE_REDIS_URL or HUMANGATE_REDIS_SENTINELS "
                "(or start `humangate serve` first)\n"
            )
            return 2
        settings = settings.model_copy(update={"redis_url": url})
        override_settings(settings)
    if channels_arg:
        channels = [c.strip() for c in channels_arg.split(",") if c.strip()]
        unknown = [c for c in channels if c not in channel_names()]
        if unknown:
            sys.stderr.write(f"humangate worker: unknown channel(s) {', '.join(unknown)}\n")
            return 2
    else:
        channels = configured_channels(settings)
    _, refusal = startup_policies(settings)
    if refusal is not None:
        sys.stderr.write(f"humangate worker: not starting: {refusal}\n")
        return 2
    run_worker(RedisTarget.of(settings), channels, burst=burst)
    return 0
