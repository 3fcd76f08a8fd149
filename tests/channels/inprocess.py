"""A real gateway app in the test's own process, and the worker's jobs run in a thread: for tests
that register a channel in ``channels.registry`` (a child process would not see it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from redis import Redis as SyncRedis
from rq import Queue
from rq.serializers import JSONSerializer

from gateway.app import create_app
from gateway.core.queue import queue_name
from gateway.runtime import Runtime
from schemas.settings import Settings
from workers.loop import close_job_loop
from workers.rq_worker import ThreadWorker

WAIT = 30.0
"""Seconds one request to the app may take."""


def work(settings: Settings, channel: str) -> None:
    """Run every queued job of ``channel`` in this thread (burst), as a worker process does."""
    assert settings.redis_url is not None
    with SyncRedis.from_url(settings.redis_url) as sync:
        queue = Queue(queue_name(channel), connection=sync, serializer=JSONSerializer)
        ThreadWorker([queue], connection=sync, serializer=JSONSerializer).work(burst=True)


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[tuple[Runtime, httpx.AsyncClient]]:
    """The app of ``create_app(settings)`` with its lifespan running, and a client to it. Enter it in
    the test's own task: the lifespan must end in the task it began in."""
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url=settings.public_url, timeout=WAIT) as client,
        ):
            yield app.state.runtime, client
    finally:
        close_job_loop()
