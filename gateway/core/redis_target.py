"""Where humangate's Redis is: one URL, or the master that a set of Redis Sentinels names.

Every process (gateway, worker, CLI) turns its settings into one ``RedisTarget`` and hands it to
``gateway.core.redis_client``, the one place that builds clients. With sentinels, each new
connection asks them for the current master, so after a failover every process follows the new
master as soon as its next command fails on the old one.

The URL (``HUMANGATE_REDIS_URL``) carries how to talk to Redis: ``rediss://`` for TLS, an ACL user
and password, a database number and redis-py's URL options. With sentinels it still does, for the
master; only its host and port are unused. Sentinels that need TLS or an ACL user are written as
URLs in ``HUMANGATE_REDIS_SENTINELS`` (``rediss://user:password@host:26379``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from redis.connection import parse_url

from schemas.settings import Settings, sentinel_address

SENTINEL_TIMEOUT = 1.0
"""Seconds to connect to one sentinel and get its answer: a sentinel that is down is skipped for
the next one quickly, so finding the master never waits on a dead sentinel for long."""

UNUSED_HOST = "localhost"
"""The host of the placeholder URL when sentinels are set without ``HUMANGATE_REDIS_URL``."""


class RedisNotConfigured(Exception):
    """Neither ``HUMANGATE_REDIS_URL`` nor ``HUMANGATE_REDIS_SENTINELS`` is set."""


@dataclass(frozen=True, slots=True)
class RedisTarget:
    """One URL, or a master named ``master`` by ``sentinels`` (each ``host:port`` or a URL)."""

    url: str
    sentinels: tuple[str, ...] = ()
    master: str = "mymaster"

    @classmethod
    def of(cls, settings: Settings) -> RedisTarget:
        """The target of ``settings``; ``RedisNotConfigured`` if they name no Redis."""
        if settings.redis_sentinels:
            url = settings.redis_url or f"redis://{UNUSED_HOST}/0"
            return cls(url, tuple(settings.redis_sentinels), settings.redis_sentinel_master)
        if settings.redis_url:
            return cls(settings.redis_url)
        raise RedisNotConfigured("set HUMANGATE_REDIS_URL or HUMANGATE_REDIS_SENTINELS")

    @property
    def is_sentinel(self) -> bool:
        return bool(self.sentinels)

    def describe(self) -> str:
        """Where this is, in words and without a password (for messages and logs)."""
        if not self.sentinels:
            return safe_url(self.url)
        names = ",".join(safe_url(s) if "://" in s else s for s in self.sentinels)
        return f"master {self.master!r} of sentinels {names}"

    def sentinel_addresses(self) -> list[tuple[str, int]]:
        return [sentinel_address(entry) for entry in self.sentinels]

    def master_options(self) -> dict[str, Any]:
        """Connection options of the master and replicas (TLS, user, password, database, ...)."""
        return _options(self.url)

    def sentinel_options(self) -> dict[str, Any]:
        """Connection options of the sentinels: TLS and user of the first one written as a URL."""
        for entry in self.sentinels:
            if "://" in entry:
                options = _options(entry)
                options.pop("db", None)  # sentinels have no databases
                return options
        return {}


def _options(url: str) -> dict[str, Any]:
    """redis-py's connection options of ``url``, without the address (the sentinels give it)."""
    options: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
    for name in ("host", "port", "path", "connection_class"):
        options.pop(name, None)
    if urlsplit(url).scheme == "rediss":
        options["ssl"] = True
    return options


def safe_url(url: str) -> str:
    """A Redis URL without its password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username
    netloc = f"{user}@{host}" if user else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
