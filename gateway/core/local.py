"""Finding the Redis a command should use: ``HUMANGATE_REDIS_URL`` (or the sentinels of
``HUMANGATE_REDIS_SENTINELS``), the running ``serve``'s
embedded one, or a short-lived embedded one on the data directory a ``serve`` already used.

A command never creates a data directory of its own: a key created in a Redis the gateway does not
use would be refused with 401 later, a silent trap when run from another directory. Each command
says which Redis it used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import redis

from gateway.core.embedded import EmbeddedRedis
from gateway.core.redis_target import RedisTarget
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


AOF_NAMES = ("appendonly.aof", "appendonlydir")
"""What the embedded Redis leaves in a data directory once it ran there (Redis 6 / Redis 7+)."""


class NoLocalRedis(Exception):
    """No Redis to use: the message says where humangate looked and what to do."""


def has_data(data_dir: Path) -> bool:
    """Whether an embedded Redis (``humangate serve``) ever kept data in ``data_dir``."""
    return any((data_dir / name).exists() for name in AOF_NAMES)


@contextlib.contextmanager
def local_redis() -> Iterator[tuple[RedisTarget, str]]:
    """Yield (where Redis is, which Redis that is in words) for a one-off command, starting the
    embedded server on an existing data directory only if no gateway runs on it; ``NoLocalRedis``
    if there is nothing to use."""
    settings = get_settings()
    if settings.external_redis:
        target = RedisTarget.of(settings)
        yield target, f"the configured Redis ({target.describe()})"
        return
    data_dir = settings.data_dir.resolve()
    url = running_embedded_url(settings.data_dir)
    if url is not None:
        yield RedisTarget(url), f"the embedded Redis of the humangate serve running with data in {data_dir}"
        return
    if not has_data(settings.data_dir):
        raise NoLocalRedis(
            f"no humangate data in {data_dir} and no humangate serve running with it. Run this in the "
            "directory where you run `humangate serve` (or set HUMANGATE_DATA_DIR to its data directory, "
            "or HUMANGATE_REDIS_URL to the Redis the gateway uses)"
        )
    with EmbeddedRedis(settings.data_dir) as server:
        yield (
            RedisTarget(server.url),
            f"the embedded Redis data in {data_dir} (humangate serve is not running)",
        )
