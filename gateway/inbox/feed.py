"""The inbox's live updates: server-sent events read from Redis, so any gateway process serves them.

Each open stream takes the newest id of the events stream, sends the pending list as it is then
(``snapshot``), and from that id on reads the events stream itself on a connection of its own
(blocking ``XREAD``): a creation, or one approval of several, becomes ``added`` (the request, read
from its hash), an ending ``ended``, a deadline that grew ``extended``, a reminder
(docs/escalation.md#reminders) ``reminded``. Nothing comes from process memory, so a request
created, answered or extended through any process shows everywhere at once.

Every ``HEARTBEAT_SECONDS`` a stream checks that its session is still valid (``signed-out`` ends it
otherwise), renews its place among the operator's streams, and sends a comment that keeps proxies
from closing it. After ``STREAM_LIFETIME`` it ends; the browser reconnects after ``RECONNECT_MS``
and gets a fresh snapshot, which is also how it recovers from any failure.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from redis.asyncio import Redis

from channels.display import AGENT_VIA
from channels.pages import item_of
from gateway.core import redis_keys as keys
from gateway.core.events import newest_event_id
from gateway.core.redis_client import COMMAND_TIMEOUT, async_redis, is_unavailable, text
from gateway.core.redis_target import RedisTarget
from gateway.core.store import HumanFunctionStore
from gateway.inbox.sessions import OperatorSessions, Session
from schemas.errors import StoreUnavailableError, UnknownRequestError
from schemas.models import Action, Outcome, Status

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0
"""Longest silence on a stream; also how often it re-checks its session."""

STREAM_LIFETIME = 600.0
"""Seconds one stream lasts before it ends and the browser reconnects."""

RECONNECT_MS = 2000
"""How long the browser waits before reconnecting (the SSE ``retry`` field)."""

LIST_LIMIT = 500
"""Most pending requests a snapshot (and the inbox page) lists, soonest deadline first."""

READ_COUNT = 200
"""Most events one read takes."""

MAX_STREAMS_PER_PROCESS = 200
"""Live-update streams one gateway process serves at once (each holds one Redis connection)."""


class OpenStreams:
    """How many live-update streams this process serves right now."""

    def __init__(self) -> None:
        self.open = 0

    async def counted(self, updates: AsyncIterator[str]) -> AsyncIterator[str]:
        self.open += 1
        try:
            async for chunk in updates:
                yield chunk
        finally:
            self.open -= 1


STREAMS = OpenStreams()
"""This process's count (a bound on its own connections; what the streams carry comes from Redis)."""

_ENDED = {
    Status.ACCEPTED: "Answered",
    Status.DECLINED: "Declined",
    Status.CANCELED: "Canceled",
    Status.EXPIRED: "Expired",
}


def sse(event: str, data: dict[str, Any]) -> str:
    """One server-sent event (JSON has no raw newlines, so ``data`` is one line)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def ended_text(outcome: Outcome) -> str:
    """How a request ended, in a few words: ``Answered by Ada (U1)``, ``Withdrawn by the agent``."""
    if outcome.via == AGENT_VIA:
        return "Withdrawn by the agent"
    if outcome.status is Status.EXPIRED and outcome.action is Action.DECLINE:  # on_timeout = "decline"
        return f"Declined: {outcome.reason}"
    verb = _ENDED.get(outcome.status, "Ended")
    return f"{verb} by {outcome.by}" if outcome.by and outcome.status is not Status.EXPIRED else verb


async def snapshot(store: HumanFunctionStore, now: float, session: Session) -> str:
    """The pending list, as far as ``session`` sees it, as one ``snapshot`` event."""
    items = [item_of(hf).data() for hf in await store.pending(LIST_LIMIT) if session.sees(hf)]
    return sse("snapshot", {"now": now, "requests": items})


async def _event(store: HumanFunctionStore, fields: dict[bytes, bytes], session: Session) -> str | None:
    """The inbox's event for one entry of the events stream (``None``: nothing to show; a request
    ``session`` does not see is never added, so its endings and extensions name nothing shown)."""
    hf_id = text(fields.get(b"id", b""))
    if b"created" in fields or b"approved" in fields:  # new, or one approval of several more
        try:
            hf = await store.get(hf_id)
        except UnknownRequestError:
            return None
        return sse("added", item_of(hf).data()) if hf.is_pending and session.sees(hf) else None
    if b"outcome" in fields:
        outcome = Outcome.model_validate_json(fields[b"outcome"])
        return sse("ended", {"id": hf_id, "status": outcome.status.value, "text": ended_text(outcome)})
    if b"deadline" in fields:
        return sse("extended", {"id": hf_id, "deadline": float(fields[b"deadline"])})
    if b"reminded" in fields:
        if session.person is not None:  # a person's inbox hears only of their requests' reminders
            try:
                if not session.sees(await store.get(hf_id)):
                    return None
            except UnknownRequestError:
                return None
        return sse("reminded", {"id": hf_id, "text": text(fields[b"reminded"])})
    return None


async def live_updates(
    target: RedisTarget,
    store: HumanFunctionStore,
    sessions: OperatorSessions,
    session: Session,
    stream_id: str,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[str]:
    """The events of one open inbox page, until it closes, its session ends, or its lifetime is up."""
    reader: Redis = async_redis(target, socket_timeout=HEARTBEAT_SECONDS + COMMAND_TIMEOUT, pool_size=1)
    started = last_check = time.monotonic()
    try:
        yield f"retry: {RECONNECT_MS}\n\n"
        position = await newest_event_id(reader)
        yield await snapshot(store, clock(), session)
        while time.monotonic() - started < STREAM_LIFETIME:
            reply: Any = await reader.xread(
                {keys.EVENTS: position}, count=READ_COUNT, block=int(HEARTBEAT_SECONDS * 1000)
            )
            for _stream, entries in reply or []:
                for entry_id, fields in entries:
                    position = text(entry_id)
                    event = await _event(store, fields, session)
                    if event is not None:
                        yield event
            if time.monotonic() - last_check >= HEARTBEAT_SECONDS or not reply:
                last_check = time.monotonic()
                if not await sessions.still_valid(session):
                    yield sse("signed-out", {})
                    return
                await sessions.renew_stream(session, stream_id, clock())
                yield ": still here\n\n"
    except StoreUnavailableError as exc:
        logger.warning("inbox stream of %s ended: %s", session.operator, exc)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        logger.warning(
            "inbox stream of %s ended: Redis unavailable (%s)", session.operator, type(exc).__name__
        )
    finally:
        # Runs when the browser goes away too (the response is cancelled): give the place back.
        with anyio.CancelScope(shield=True):
            try:
                await sessions.release_stream(session, stream_id)
            except StoreUnavailableError:
                pass  # the lease runs out on its own
            await reader.aclose()
