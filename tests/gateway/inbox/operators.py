"""Helpers of the inbox tests: operator keys in the test Redis, and signed-in HTTP clients."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from redis.asyncio import Redis

from gateway.core.callers import KeyRing
from schemas.settings import Settings
from tests.gateway.flows import WAIT

CSRF = re.compile(r'name="hg-csrf" value="([^"]+)"')


async def create_key(redis_url: str, name: str, *, operator: bool = True) -> str:
    """A key stored in the test Redis, as ``humangate keys create NAME [--operator]`` makes it."""
    async with Redis.from_url(redis_url) as redis:
        return await KeyRing(redis, Settings(_env_file=None)).create(name, operator=operator)


async def revoke_key(redis_url: str, name: str) -> None:
    async with Redis.from_url(redis_url) as redis:
        await KeyRing(redis, Settings(_env_file=None)).revoke(name)


@asynccontextmanager
async def signed_in(gateway_url: str, key: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client holding an inbox session (its cookie jar has the session cookie)."""
    async with httpx.AsyncClient(base_url=gateway_url, timeout=WAIT) as client:
        response = await client.post("/inbox/sign-in", data={"key": key})
        assert response.status_code == 303 and response.headers["location"] == "/inbox"
        yield client


def csrf_of(html: str) -> str:
    """The session's CSRF token in an inbox page."""
    match = CSRF.search(html)
    assert match, "no CSRF token in the page"
    return match.group(1)
