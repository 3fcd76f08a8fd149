"""``humangate doctor``: is Redis reachable, which channels are configured, what is missing."""

from __future__ import annotations

import asyncio
import sys

import redis

from channels.registry import CHANNELS
from gateway.core import redis_check
from gateway.core.local import running_embedded_url
from gateway.core.redis_client import sync_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.topology import read_topology, topology_lines
from schemas.settings import CHANNEL_NAMES, Settings, get_settings


def _say(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}[ok]
    sys.stdout.write(f"[{mark}] {text}\n")


def _check_redis(settings: Settings) -> bool:
    if settings.external_redis:
        target = RedisTarget.of(settings)
    else:
        url = running_embedded_url(settings.data_dir)
        if url is None:
            _say(
                None, "Redis: HUMANGATE_REDIS_URL is not set; `humangate serve` will start an embedded Redis"
            )
            return True
        target = RedisTarget(url)
    where = target.describe()
    try:
        with sync_redis(target) as client:
            client.ping()
            version = client.info("server").get("redis_version", "?")
            problem, warning = redis_check.check(client)
            topology = read_topology(client, target)
    except redis.RedisError as exc:
        _say(False, f"Redis: cannot reach {where}: {exc}")
        return False
    if problem:
        _say(False, f"Redis at {where}: {problem}")
        return False
    _say(True, f"Redis {version} reachable at {where}")
    if warning:
        _say(None, f"Redis: warning: {warning}")
    healthy = True
    for ok, line in topology_lines(topology, target, settings.wait_replicas):
        _say(ok, line)
        healthy = healthy and ok is not False
    return healthy


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
