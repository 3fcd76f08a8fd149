"""``humangate webhooks failed`` and ``humangate webhooks redrive`` (docs/cli.md#humangate-webhooks)."""

from __future__ import annotations

import asyncio
import sys
import time

from gateway.core.local import NoLocalRedis, local_redis
from gateway.core.redis_client import RedisTarget, async_redis
from gateway.core.webhook_store import Delivery, WebhookStore
from gateway.core.webhooks import iso
from schemas.settings import get_settings


def _row(delivery: Delivery) -> str:
    error = delivery.error or "-"
    return (
        f"{delivery.id}\t{delivery.state}\t{delivery.type}\t{delivery.url}\t"
        f"{delivery.attempts}\t{iso(delivery.updated)}\t{error}\n"
    )


async def _failed(store: WebhookStore) -> int:
    rows = await store.failed()
    if not rows:
        sys.stderr.write("no failed webhook deliveries\n")
        return 0
    sys.stdout.write("id\tstate\tevent\turl\tattempts\tat\terror\n")
    for delivery in rows:
        sys.stdout.write(_row(delivery))
    return 0


async def _redrive(store: WebhookStore, ids: list[str], every: bool) -> int:
    wanted = [d.id for d in await store.failed()] if every else ids
    queued = await store.redrive(wanted, time.time())
    for delivery in queued:
        sys.stdout.write(f"queued again {delivery}\n")
    missing = [d for d in wanted if d not in queued]
    for delivery in missing:
        sys.stderr.write(f"{delivery}: not a failed delivery (or its event has expired)\n")
    sys.stderr.write(f"{len(queued)} delivery(ies) queued again; a running worker sends them\n")
    return 1 if missing else 0


def run(command: str, ids: list[str], every: bool) -> int:
    """Run ``humangate webhooks <command>``; 2 when no Redis can be reached or the arguments are wrong."""
    if command == "redrive" and not ids and not every:
        sys.stderr.write("humangate webhooks redrive: name delivery ids, or --all\n")
        return 2

    async def act(target: RedisTarget) -> int:
        async with async_redis(target) as redis:
            store = WebhookStore(redis, get_settings().webhook_retry_schedule)
            if command == "failed":
                return await _failed(store)
            return await _redrive(store, ids, every)

    try:
        with local_redis() as (target, which):
            sys.stderr.write(f"humangate webhooks: using {which}\n")
            return asyncio.run(act(target))
    except NoLocalRedis as exc:
        sys.stderr.write(f"humangate webhooks: {exc}\n")
        return 2
