"""Whether a tool's result reached a live client.

A call that hands out a person's answer marks it returned (``gateway.core.returned``), so that the next
identical call asks again instead of receiving it a second time. That mark must wait until a client
actually got the result: a disconnect is not a cancellation, so on 2025-11-25 a call whose agent's
network dropped keeps waiting on the server and ends with a result that the SDK writes to a stream
nobody reads (there is no event store to resume from). Marked then, the answer would be lost, and
the agent's next identical call would ask the person a second time.

``DeliveryWatching`` wraps every ``POST /mcp`` in a ``DeliveryWatch`` that sees the request's
``http.disconnect`` and what its response writes. A call registers what to do once its result is
delivered, or lost, and the watch runs one or the other: delivered once the JSON-RPC response that
carries the call's result (an SSE event, or the whole JSON body) was written to a connection no
disconnect was seen on; lost when the client went away first, when the response ended without that
result (a cancelled request is answered with an error), or when the result came after the response
was over. A connection that dies in the very instant of that write without the server hearing of
it is the one case nobody can tell apart (MCP has no acknowledgement).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

DELIVERY_STATE_KEY = "humangate.delivery"
"""Where ``DeliveryWatching`` leaves the request's ``DeliveryWatch`` in the ASGI scope's state."""

Hook = Callable[[], None]
"""What to do once a result was delivered, or lost (quick and synchronous: it only queues work)."""

RequestId = str | int


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class _Awaited:
    request_id: RequestId
    delivered: Hook
    lost: Hook


def _messages(body: bytes) -> list[Any]:
    """The JSON-RPC messages in one written chunk: a JSON body, or SSE events' ``data``."""
    stripped = body.lstrip()
    if stripped.startswith(b"{"):
        texts = [stripped]
    else:
        texts = []
        for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
            if data:
                texts.append(b"\n".join(data))
    messages = []
    for text in texts:
        try:
            messages.append(json.loads(text))
        except ValueError:
            continue
    return messages


def results_in(body: bytes) -> set[RequestId]:
    """The ids of the JSON-RPC results (not errors) a written chunk carries."""
    if b'"result"' not in body:  # progress notifications and pings: nothing to parse
        return set()
    return {
        message["id"]
        for message in _messages(body)
        if isinstance(message, dict) and "result" in message and isinstance(message.get("id"), str | int)
    }


class DeliveryWatch:
    """One POST's response: which results it delivered to a live client."""

    def __init__(self) -> None:
        self._awaited: list[_Awaited] = []
        self._ended = False
        self.disconnected = False
        """The client went away before the response ended."""

    def after(self, request_id: RequestId, delivered: Hook, lost: Hook = _nothing) -> None:
        """Run ``delivered`` once the result of ``request_id`` is written to the live client, else
        ``lost`` (at once when the response is over already: the result was not in it)."""
        if self._ended:
            _run(lost)
        else:
            self._awaited.append(_Awaited(request_id, delivered, lost))

    def wrap(self, receive: Receive, send: Send) -> tuple[Receive, Send]:
        """The request's ``receive`` and ``send``, watched."""

        async def watched_receive() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and not self._ended:
                self.disconnected = True
                self._end()
            return message

        async def watched_send(message: Message) -> None:
            if message["type"] != "http.response.body":
                await send(message)
                return
            last = not message.get("more_body", False)
            carried = results_in(bytes(message.get("body", b""))) if self._awaited else set()
            if carried:
                # One checkpoint first: a disconnect the server already heard of reaches the task
                # reading ``receive`` before this write, which the server would drop in silence.
                await anyio.sleep(0)
            try:
                await send(message)
            except BaseException:
                self._end()
                raise
            if carried and not self._ended:
                self._deliver(carried)
            if last:
                self._end()

        return watched_receive, watched_send

    def close(self) -> None:
        """The request is over: whatever was not delivered by now was lost."""
        self._end()

    def _deliver(self, request_ids: set[RequestId]) -> None:
        delivered = [hooks for hooks in self._awaited if hooks.request_id in request_ids]
        self._awaited = [hooks for hooks in self._awaited if hooks.request_id not in request_ids]
        for hooks in delivered:
            _run(hooks.delivered)

    def _end(self) -> None:
        self._ended = True
        lost, self._awaited = self._awaited, []
        for hooks in lost:
            _run(hooks.lost)


def _run(hook: Hook) -> None:
    try:
        hook()
    except Exception:
        logger.exception("a delivery hook failed")


class DeliveryWatching:
    """ASGI wrapper of ``/mcp``: every POST gets a ``DeliveryWatch`` in its scope's state."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        watch = DeliveryWatch()
        scope.setdefault("state", {})[DELIVERY_STATE_KEY] = watch
        watched_receive, watched_send = watch.wrap(receive, send)
        try:
            await self.app(scope, watched_receive, watched_send)
        finally:
            watch.close()


def after_delivery(ctx: ServerRequestContext[Any], delivered: Hook, lost: Hook = _nothing) -> None:
    """Run ``delivered`` once this request's result reached a live client, else ``lost``. A request
    that reached the server some other way than a watched POST counts as delivered at once."""
    request = ctx.request
    watch = None if request is None else request.scope.get("state", {}).get(DELIVERY_STATE_KEY)
    if isinstance(watch, DeliveryWatch) and ctx.request_id is not None:
        watch.after(ctx.request_id, delivered, lost)
    else:
        _run(delivered)
