"""``humangate audit export``: the audit trails of a time range as JSON lines or CSV."""

from __future__ import annotations

import asyncio
import csv
import datetime
import json
import sys
from collections.abc import AsyncIterator
from typing import Any, TextIO

from redis.asyncio import Redis

from gateway.core import audit
from gateway.core.local import NoLocalRedis, local_redis
from gateway.core.redis_client import async_redis
from schemas.settings import get_settings, override_settings

CSV_COLUMNS = (
    "id",
    "event",
    "at",
    "caller",
    "policy",
    "channels",
    "channel",
    "target",
    "step",
    "who",
    "name",
    "where",
    "why",
    "outcome",
    "reason",
    "count",
    "of",
    "answer",
)
"""The CSV's columns: the id, the event and its time, then every field of any event (empty where an
event has none); lists and answers are JSON in their cell."""


def parse_time(value: str) -> float:
    """An ISO 8601 time (``2026-11-29``, ``2026-11-29T04:40:00Z``, with any offset; UTC without one)
    as seconds since epoch; ``ValueError`` naming the rule otherwise."""
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"{value!r} is not an ISO 8601 time (e.g. 2026-11-29 or 2026-11-29T04:40:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


async def write_export(events: AsyncIterator[dict[str, Any]], out: TextIO, form: str) -> int:
    """Write ``events`` to ``out`` as ``jsonl`` or ``csv``; returns how many."""
    written = 0
    writer = csv.DictWriter(out, CSV_COLUMNS, extrasaction="ignore") if form == "csv" else None
    if writer is not None:
        writer.writeheader()
    async for event in events:
        if writer is None:
            out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            writer.writerow({k: _cell(v) for k, v in event.items()})
        written += 1
    return written


def _cell(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value


def run_export(since: str | None, until: str | None, form: str) -> int:
    """The command: exit 0 with the events on stdout, 2 when the times or Redis are wrong."""
    try:
        low = None if since is None else parse_time(since)
        high = None if until is None else parse_time(until)
    except ValueError as exc:
        sys.stderr.write(f"humangate audit export: --since/--until: {exc}\n")
        return 2
    if low is not None and high is not None and low > high:
        sys.stderr.write(
            f"humangate audit export: --since {since} is later than --until {until}: no event can be "
            "in that range; swap them\n"
        )
        return 2

    async def act(redis: Redis) -> int:
        return await write_export(audit.export(redis, low, high), sys.stdout, form)

    try:
        with local_redis() as (target, which):
            sys.stderr.write(f"humangate audit export: using {which}\n")
            if not get_settings().external_redis:
                override_settings(get_settings().model_copy(update={"redis_url": target.url}))

            async def main() -> int:
                async with async_redis(target) as redis:
                    return await act(redis)

            count = asyncio.run(main())
    except NoLocalRedis as exc:
        sys.stderr.write(f"humangate audit export: {exc}\n")
        return 2
    sys.stderr.write(f"{count} event(s)\n")
    return 0
