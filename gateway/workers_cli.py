"""``humangate worker``: RQ workers on the channels' queues, as separate processes."""

from __future__ import annotations

import logging
import sys

from redis import Redis as SyncRedis
from rq import Queue, Worker
from rq.serializers import JSONSerializer

from channels.registry import configured_channels
from gateway.local import running_embedded_url
from gateway.queue import queue_name
from schemas.settings import CHANNEL_NAMES, get_settings, override_settings

logger = logging.getLogger(__name__)


def run_workers(channels_arg: str | None, *, burst: bool) -> int:
    settings = get_settings()
    url = settings.redis_url or running_embedded_url(settings.data_dir)
    if url is None:
        sys.stderr.write("humangate worker: set HUMANGATE_REDIS_URL (or start `humangate serve` first)\n")
        return 2
    if url != settings.redis_url:
        settings = settings.model_copy(update={"redis_url": url})
        override_settings(settings)
    if channels_arg:
        channels = [c.strip() for c in channels_arg.split(",") if c.strip()]
        unknown = [c for c in channels if c not in CHANNEL_NAMES]
        if unknown:
            sys.stderr.write(f"humangate worker: unknown channel(s) {', '.join(unknown)}\n")
            return 2
    else:
        channels = configured_channels(settings)
    connection = SyncRedis.from_url(url)
    queues = [Queue(queue_name(c), connection=connection, serializer=JSONSerializer) for c in channels]
    logger.info("worker on queues %s", ", ".join(q.name for q in queues))
    worker = Worker(queues, connection=connection, serializer=JSONSerializer)
    worker.work(burst=burst, with_scheduler=not burst)
    return 0
