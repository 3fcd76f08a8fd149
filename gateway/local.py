"""Finding the Redis a command should use: ``HUMANGATE_REDIS_URL``, the running ``serve``'s
embedded one, or a short-lived embedded one on the same data directory."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import redis

from gateway.embedded import EmbeddedRedis
from schemas.settings import get_settings

URL_FILE = "redis.url"
"""File in the data directory where ``serve`` writes its embedded Redis URL while it runs."""


def url_file(data_dir: Path) -> Path:
    return data_dir / URL_FILE


def running_embedded_url(data_dir: Path) -> str | None:
    """The URL of the embedded Redis a running ``serve`` announced, if it answers."""
    path = url_file(data_dir)
    if not path.exists():
        return None
    url = path.read_text().strip()
    try:
        with redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1) as client:
            client.ping()
    except redis.RedisError:
        return None
    return url


@contextlib.contextmanager
def local_redis() -> Iterator[str]:
    """Yield a Redis URL for a one-off command, starting the embedded server only if needed."""
    settings = get_settings()
    if settings.redis_url:
        yield settings.redis_url
        return
    url = running_embedded_url(settings.data_dir)
    if url is not None:
        yield url
        return
    with EmbeddedRedis(settings.data_dir) as server:
        yield server.url
