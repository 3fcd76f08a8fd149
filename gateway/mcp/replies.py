"""Carrying a client's reply to the gateway process that asked for it.

On 2025-11-25 sessions humangate asks the client's own form with a server-to-client request on
the tool call's stream (``gateway.mcp.client_form``). The client answers with a new POST, which
``serve --workers N`` (or a load balancer) may hand to another process, where nothing awaits it.
So a process that asks notes, in Redis, that replies on that session are for its inbox; a process
that receives a reply meant for another inbox publishes it there and answers 202, as the transport
would; and each process hands what arrives in its inbox to the session's transport, as if the
client had posted it there.

An inbox is a Redis list the process pops with a blocking read, not a pub/sub channel: a reply
pushed while its process cannot read (a Sentinel failover, a restarting Redis) waits there and is
handed over once the process reads again (for ``INBOX_KEEP_SECONDS``), where a published one would
have been lost. The reader says when its inbox is unreadable and when it is readable again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import COMMAND_TIMEOUT, async_redis, store_operation, text
from gateway.core.redis_target import RedisTarget
from gateway.core.tasks import stop_task
from schemas.errors import InvalidJsonError, StoreUnavailableError
from schemas.json_text import read_json

logger = logging.getLogger(__name__)

FORWARDED_HEADERS = ("accept", "content-type", "host", "mcp-protocol-version", "mcp-session-id", "origin")
"""The request headers a carried reply keeps (the transport checks them as it would the original's)."""

RECONNECT_DELAY = 1.0
"""Seconds before listening to the inbox again after its connection failed."""

INBOX_KEEP_SECONDS = 60
"""How long replies wait in an inbox nobody reads (its process cut off from Redis, or gone): far
longer than a failover, short enough that a dead process's inbox does not linger."""

POP_SECONDS = 1
"""Seconds one blocking read of the inbox waits before reading again (it hands a reply over the
moment one arrives)."""

Deliver = Callable[[str, bytes, dict[str, str]], Awaitable[None]]
"""Hand a carried reply (session id, body, headers) to the session's transport in this process."""


def is_reply(body: bytes) -> bool:
    """Whether a POST body is a JSON-RPC response (to a request the server sent), not a request."""
    try:
        message = read_json(body)
    except InvalidJsonError:
        return False
    return (
        isinstance(message, dict)
        and "method" not in message
        and "id" in message
        and ("result" in message or "error" in message)
    )


class ReplyRouter:
    """This process's inbox of carried replies, and the notes of which process waits for which."""

    def __init__(self, target: RedisTarget) -> None:
        self.inbox = uuid.uuid4().hex
        self._redis: Redis = async_redis(target, socket_timeout=COMMAND_TIMEOUT + 30, pool_size=4)
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def expecting(self, session_id: str, seconds: float) -> AsyncIterator[None]:
        """While inside, replies on ``session_id`` are carried here (best effort: without Redis, only
        a reply that reaches this process is seen)."""
        noted = False
        try:
            await self._note(session_id, seconds)
            noted = True
        except StoreUnavailableError as exc:
            logger.warning("replies on MCP session %s not routed here: %s", session_id[:12], exc)
        try:
            yield
        finally:
            if noted:
                with contextlib.suppress(StoreUnavailableError):
                    await self._forget(session_id)

    @store_operation
    async def _note(self, session_id: str, seconds: float) -> None:
        await self._redis.set(keys.mcp_asking(session_id), self.inbox, px=max(1000, int(seconds * 1000)))

    @store_operation
    async def _forget(self, session_id: str) -> None:
        key = keys.mcp_asking(session_id)
        if await self._redis.get(key) == self.inbox.encode():
            await self._redis.delete(key)

    @store_operation
    async def elsewhere(self, session_id: str) -> str | None:
        """The inbox of the other process waiting for replies on ``session_id``, if one is."""
        raw = await self._redis.get(keys.mcp_asking(session_id))
        inbox = None if raw is None else text(raw)
        return None if inbox is None or inbox == self.inbox else inbox

    @store_operation
    async def carry(self, inbox: str, session_id: str, body: bytes, headers: dict[str, str]) -> None:
        """Push a reply to the inbox of the process that waits for it (kept there until read)."""
        kept = {name: value for name, value in headers.items() if name in FORWARDED_HEADERS}
        message = json.dumps({"session": session_id, "body": body.decode(), "headers": kept})
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.rpush(keys.mcp_inbox(inbox), message)
            pipe.expire(keys.mcp_inbox(inbox), INBOX_KEEP_SECONDS)
            await pipe.execute()

    def start(self, deliver: Deliver) -> None:
        self._task = asyncio.create_task(self._listen(deliver), name="humangate-replies")

    async def stop(self) -> None:
        if self._task is not None:
            await stop_task(self._task)
        await self._redis.aclose()

    async def _listen(self, deliver: Deliver) -> None:
        failures = 0
        inbox = keys.mcp_inbox(self.inbox)
        while True:
            try:
                popped: Any = await self._redis.blpop([inbox], timeout=POP_SECONDS)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not failures:
                    logger.warning("MCP reply inbox unreadable (%s: %s); retrying", type(exc).__name__, exc)
                failures += 1
                await asyncio.sleep(RECONNECT_DELAY)
                continue
            if failures:
                logger.info("MCP reply inbox readable again after %d failed reads", failures)
                failures = 0
            if popped is not None:
                await self._hand_over(deliver, popped[1])

    async def _hand_over(self, deliver: Deliver, message: bytes | str) -> None:
        try:
            data = json.loads(message)
            await deliver(str(data["session"]), str(data["body"]).encode(), dict(data["headers"]))
        except Exception:
            logger.exception("could not hand over a carried MCP reply")
