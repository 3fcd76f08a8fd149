"""``humangate doctor``: is Redis reachable, which channels are configured, what is missing."""

from __future__ import annotations

import asyncio
import sys

import redis

from channels.registry import CHANNELS
from gateway.core import redis_check
from gateway.core.local import running_embedded_url
from gateway.core.redis_client import safe_url, sync_redis
from schemas.settings import CHANNEL_NAMES, Settings, get_settings


def _say(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}[ok]
    sys.stdout.write(f"[{mark}] {text}\n")


def _check_redis(settings: Settings) -> bool:
    url = settings.redis_url
    if url is None:
        url = running_embedded_url(settings.data_dir)
        if url is None:
            _say(
                None, "Redis: HUMANGATE_REDIS_URL is not set; `humangate serve` will start an embedded Redis"
            )
            return True
    try:
        with sync_redis(url) as client:
            client.ping()
            version = client.info("server").get("redis_version", "?")
            problem, warning = redis_check.check(client)
    except redis.RedisError as exc:
        _say(False, f"Redis: cannot reach {safe_url(url)}: {exc}")
        return False
    if problem:
        _say(False, f"Redis at {safe_url(url)}: {problem}")
        return False
    _say(True, f"Redis {version} reachable at {safe_url(url)}")
    if warning:
        _say(None, f"Redis: warning: {warning}")
    return True


async def _check_channels(settings: Settings) -> bool:
    healthy = True
    for name in CHANNEL_NAMES:
        channel = CHANNELS.get(name)
        if channel is None:
            _say(None, f"{name}: not available in this version")
            continue
        missing = channel.missing_settings(settings)
        if missing:
            _say(None, f"{name}: not configured (set {', '.join(missing)})")
            continue
        problems = await channel.check(settings)
        for problem in problems:
            _say(False, f"{name}: {problem}")
        if problems:
            healthy = False
        else:
            _say(True, f"{name}: configured and working")
    return healthy


def run() -> int:
    """Print one line per check; exit 1 when something configured is broken."""
    settings = get_settings()
    ok = _check_redis(settings)
    ok = asyncio.run(_check_channels(settings)) and ok
    return 0 if ok else 1
