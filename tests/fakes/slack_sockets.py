"""The Socket Mode end of the fake Slack: a real WebSocket server on loopback (aiohttp), reached by
the real slack-sdk ``SocketModeClient`` through the URL the fake's ``apps.connections.open`` hands out.

Like Slack, it greets each connection with ``hello``, sends the envelopes a test pushes
(``{"envelope_id", "type": "interactive", "payload", "accepts_response_payload": true}``) spread
over the open connections, and records every ack (its envelope id, its payload, how long it took).
A test can also send ``disconnect`` (Slack's warning before it refreshes a connection), close a
socket as Slack does, or drop one without a word (a network path lost: the TCP connection aborted).
It runs its own event loop in a daemon thread; tests wait on it with deadlines, never sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import WSMsgType, web

WAIT = 30.0
"""Seconds a test waits for what it expects before failing."""

T = TypeVar("T")


@dataclass
class Ack:
    """An envelope's acknowledgement, as the fake received it."""

    envelope_id: str
    payload: dict[str, Any] | None
    connection: int
    seconds: float
    """From the envelope sent to its ack received."""


@dataclass
class Connection:
    """One WebSocket a client opened."""

    id: int
    ws: web.WebSocketResponse
    request: web.Request
    opened_at: float = field(default_factory=time.monotonic)
    closed_at: float | None = None

    @property
    def closed(self) -> bool:
        return self.closed_at is not None


@dataclass
class SocketModeServer:
    """See the module docstring."""

    connections: dict[int, Connection] = field(default_factory=dict)
    acks: dict[str, Ack] = field(default_factory=dict)
    sent: dict[str, tuple[float, int]] = field(default_factory=dict)
    """envelope id -> (monotonic time it was sent, the connection it went to)."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _turn: itertools.count[int] = field(default_factory=itertools.count)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _runner: web.AppRunner | None = None
    _port: int = 0

    def start(self) -> SocketModeServer:
        started = threading.Event()
        threading.Thread(target=self._run, args=(started,), name="fake-slack-sockets", daemon=True).start()
        if not started.wait(WAIT):
            raise RuntimeError("the fake Socket Mode server did not start")
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(WAIT)
        self._loop.call_soon_threadsafe(self._loop.stop)

    def url(self) -> str:
        """A fresh connection URL, as ``apps.connections.open`` answers."""
        return f"ws://127.0.0.1:{self._port}/link/?ticket={uuid.uuid4().hex}&app_id=A1"

    def live(self) -> list[int]:
        """The ids of the connections open now, oldest first."""
        with self._changed:
            return [c.id for c in self.connections.values() if not c.closed]

    def opened(self) -> int:
        """How many connections were ever opened."""
        with self._changed:
            return len(self.connections)

    def push(self, payload: dict[str, Any], connection: int | None = None) -> str:
        """Send an interactive payload in an envelope, on ``connection`` or, as Slack does, on the
        next open one in turn; its envelope id. Raises ``ConnectionError`` when it could not be sent."""
        envelope_id = uuid.uuid4().hex
        envelope = {
            "envelope_id": envelope_id,
            "type": "interactive",
            "payload": payload,
            "accepts_response_payload": True,
        }
        self._send(envelope, connection, envelope_id)
        return envelope_id

    def disconnect(self, connection: int) -> None:
        """Slack's warning that it will close this connection soon (the client opens another)."""
        message = {"type": "disconnect", "reason": "refresh_requested", "debug_info": {"host": "fake"}}
        self._send(message, connection, None)

    def close(self, connection: int) -> None:
        """Close a connection with a close frame, as Slack does."""
        self._call(self._close(connection, abort=False))

    def drop(self, connection: int) -> None:
        """Abort a connection's TCP stream without a close frame: the network path is gone."""
        self._call(self._close(connection, abort=True))

    def wait_for(self, found: Callable[[], T | None], timeout: float = WAIT) -> T:
        """Block until ``found()`` returns something truthy, and return it."""
        result: list[T] = []

        def check() -> bool:
            value = found()
            if value:
                result.append(value)
            return bool(value)

        with self._changed:
            if not self._changed.wait_for(check, timeout):
                raise AssertionError(
                    f"the fake Socket Mode server did not see what was expected ({len(self.acks)} acks, "
                    f"live connections {[c.id for c in self.connections.values() if not c.closed]})"
                )
        return result[0]

    async def wait(self, found: Callable[[], T | None], timeout: float = WAIT) -> T:
        """``wait_for`` without blocking the test's event loop."""
        return await asyncio.to_thread(self.wait_for, found, timeout)

    async def acked(self, envelope_id: str, timeout: float = WAIT) -> Ack:
        """The ack of an envelope, once it arrived."""
        return await self.wait(lambda: self.acks.get(envelope_id), timeout)

    async def connected(self, count: int = 1, timeout: float = WAIT) -> list[int]:
        """The live connections, once there are at least ``count``."""
        return await self.wait(lambda: self.live() if len(self.live()) >= count else None, timeout)

    def _send(self, message: dict[str, Any], connection: int | None, envelope_id: str | None) -> None:
        with self._changed:
            live = [c for c in self.connections.values() if not c.closed]
            if connection is not None:
                live = [c for c in live if c.id == connection]
            if not live:
                raise ConnectionError(f"no open Socket Mode connection ({connection or 'any'})")
            chosen = live[next(self._turn) % len(live)]
            if envelope_id is not None:
                self.sent[envelope_id] = (time.monotonic(), chosen.id)
        self._call(chosen.ws.send_str(json.dumps(message)))

    def _call(self, work: Any) -> None:
        try:
            asyncio.run_coroutine_threadsafe(work, self._loop).result(WAIT)
        except (ConnectionError, RuntimeError) as exc:
            raise ConnectionError(f"the envelope could not be sent ({exc})") from exc

    async def _close(self, connection: int, *, abort: bool) -> None:
        with self._changed:
            found = self.connections[connection]
        if abort and found.request.transport is not None:
            found.request.transport.abort()
        else:
            await found.ws.close()
        self._closed(found)

    def _closed(self, connection: Connection) -> None:
        with self._changed:
            if connection.closed_at is None:
                connection.closed_at = time.monotonic()
            self._changed.notify_all()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._changed:
            connection = Connection(next(self._ids), ws, request)
            self.connections[connection.id] = connection
            count = len([c for c in self.connections.values() if not c.closed])
            self._changed.notify_all()
        hello = {
            "type": "hello",
            "num_connections": count,
            "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
            "connection_info": {"app_id": "A1"},
        }
        try:
            await ws.send_str(json.dumps(hello))
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._ack(connection, message.data)
        finally:
            self._closed(connection)
        return ws

    def _ack(self, connection: Connection, data: str) -> None:
        body = json.loads(data)
        envelope_id = str(body.get("envelope_id") or "")
        with self._changed:
            sent_at, _ = self.sent.get(envelope_id, (time.monotonic(), connection.id))
            self.acks[envelope_id] = Ack(
                envelope_id, body.get("payload"), connection.id, time.monotonic() - sent_at
            )
            self._changed.notify_all()

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/link/", self._socket)
        self._runner = web.AppRunner(app, handle_signals=False)
        self._loop.run_until_complete(self._runner.setup())
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self._port = int(sock.getsockname()[1])
        self._loop.run_until_complete(web.SockSite(self._runner, sock).start())
        started.set()
        self._loop.run_forever()
        self._loop.close()
