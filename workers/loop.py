"""One long-lived event loop per worker process, on which every job's async work runs.

RQ calls jobs synchronously; each job hands its coroutine to this loop and waits for it. Compared
with ``asyncio.run`` per job, nothing is set up or torn down per job: the loop, its Redis
connections and each platform's HTTP client (slack-sdk's and discord.py's sessions) live as long
as the process, and a job costs what its own I/O costs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from channels.base import RenderContext
from channels.registry import CHANNELS
from gateway.core.audit import audit_settings
from gateway.core.links import form_url
from gateway.core.policies import load_policies
from gateway.core.redis_client import async_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.replicas import replica_wait
from gateway.core.store import HumanFunctionStore
from gateway.core.webhooks import Webhooks
from schemas.errors import UnknownRequestError
from schemas.models import HumanFunction
from schemas.policies import PolicyFileError
from schemas.settings import Settings, get_settings
from schemas.webhooks import Webhook

T = TypeVar("T")

CLOSE_TIMEOUT = 10.0
"""Seconds closing the loop's clients may take when the worker stops."""


class JobLoop:
    """A loop in a daemon thread, with the store and platform clients jobs share."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = HumanFunctionStore(
            async_redis(RedisTarget.of(settings)),
            retention=settings.result_retention,
            replicas=replica_wait(settings),
            audit=audit_settings(settings),
        )
        self.webhooks = Webhooks(
            self.store.redis,
            _webhooks_of(settings),
            settings.webhook_retry_schedule,
            answers=settings.audit_answers,
        )
        """The policy file's webhooks, told of what happens in jobs (posts, escalations, reminders)."""
        self._clients: dict[str, Any] = {}
        self._stack = contextlib.AsyncExitStack()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="humangate-jobs", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the loop and return its result; cancel it after ``timeout`` seconds
        or when the calling job is interrupted (RQ's job timeout, a shutdown)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the job's work took longer than {timeout:.0f} s") from None
        except BaseException:
            future.cancel()
            raise

    def context(self, hf: HumanFunction) -> RenderContext:
        """What rendering ``hf`` (or a step's view of it) needs now: its form link and the time."""
        return RenderContext(form_url=form_url(self.settings, hf), now=time.time())

    async def load(self, hf_id: str) -> HumanFunction | None:
        """The request ``hf_id``, or ``None`` once Redis forgot it."""
        try:
            return await self.store.get(hf_id)
        except UnknownRequestError:
            return None

    async def client(self, channel: str) -> Any:
        """Channel ``channel``'s platform client, opened on first use and kept."""
        if channel not in self._clients:
            connect = CHANNELS[channel].connect(self.settings)
            self._clients[channel] = await self._stack.enter_async_context(connect)
        return self._clients[channel]

    def close(self) -> None:
        """Close the clients and the Redis connections, then stop the loop."""

        async def close_all() -> None:
            await self._stack.aclose()
            await self.store.redis.aclose()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close_all(), self._loop).result(CLOSE_TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()


_current: JobLoop | None = None
_lock = threading.Lock()


def _webhooks_of(settings: Settings) -> tuple[Webhook, ...]:
    """The policy file's webhooks (``humangate worker`` and ``serve`` refuse to start on an invalid
    file, so one that turned invalid since is read as none, and said so)."""
    try:
        return load_policies(settings).webhooks
    except PolicyFileError as exc:
        logging.getLogger(__name__).warning("webhooks off in this worker: %s", exc)
        return ()


def job_loop(settings_of: Callable[[], Settings] = get_settings) -> JobLoop:
    """The process's job loop, for the current settings (a new one if the settings were replaced,
    as tests do between runs)."""
    global _current
    settings = settings_of()
    with _lock:
        if _current is None or _current.settings is not settings:
            if _current is not None:
                _current.close()
            _current = JobLoop(settings)
        return _current


def close_job_loop() -> None:
    """Close the process's job loop, if one was started (a worker that stops)."""
    global _current
    with _lock:
        if _current is not None:
            _current.close()
            _current = None
