"""A fake Discord Gateway for tests: a WebSocket server on loopback that discord.py's own client
speaks to unmodified (``GET /gateway/bot`` of the fake API names it).

It speaks what Discord speaks to a bot: HELLO (op 10) with a heartbeat interval, then IDENTIFY (op 2;
the intents are recorded, and privileged ones refused with close code 4014 as Discord does) answered
with READY, or RESUME (op 6) of a known session answered with the events it missed and RESUMED (an
unknown session gets INVALID_SESSION, op 9). Heartbeats (op 1) are acknowledged (op 11). Messages
go out as ``zlib-stream`` when the client asks for it in its query string (one compression context
per connection, each message ending in a sync flush), else as text.

Tests push interactions with ``dispatch`` (``INTERACTION_CREATE``, ``d`` exactly as given), which
returns whether a connected session got it; one nobody was connected to receive is recorded in
``undelivered``, as Discord fails it. ``drop`` cuts the sockets without a close frame, ``reconnect``
sends op 7. ``most_connected`` is the largest number of sessions connected at once (two bot processes
must never both be).

The server runs on an event loop in a thread of its own; every public method may be called from the
test's thread or event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
import socket
import threading
import zlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import WSMsgType, web

T = TypeVar("T")

WAIT = 30.0
"""Seconds a test waits for the fake Gateway to see what it expects."""

HEARTBEAT_MS = 2000
"""The heartbeat interval HELLO asks for (Discord asks ~41 s; shorter here, so tests see beats)."""

PRIVILEGED_INTENTS = {1 << 1: "GUILD_MEMBERS", 1 << 8: "GUILD_PRESENCES", 1 << 15: "MESSAGE_CONTENT"}
"""Intents a bot must be granted in the Developer Portal; Discord closes with 4014 otherwise."""


@dataclass
class _Session:
    """A Gateway session: what was dispatched in it (a RESUME replays what the client missed)."""

    id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0

    def event(self, name: str, data: Any) -> dict[str, Any]:
        self.seq += 1
        payload = {"op": 0, "t": name, "s": self.seq, "d": data}
        self.events.append(payload)
        return payload


@dataclass(eq=False)
class _Connection:
    ws: web.WebSocketResponse
    transport: asyncio.BaseTransport | None
    compress: Any  # zlib compress object, or None for plain text
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    session: _Session | None = None

    async def send(self, payload: dict[str, Any]) -> None:
        text = json.dumps(payload)
        async with self.lock:  # one compression stream: messages must go out in the order compressed
            if self.compress is None:
                await self.ws.send_str(text)
            else:
                data = self.compress.compress(text.encode()) + self.compress.flush(zlib.Z_SYNC_FLUSH)
                await self.ws.send_bytes(data)


class FakeGateway:
    """Discord's Gateway for one bot token; see the module docstring."""

    def __init__(self, token: str, user: dict[str, Any], application_id: str) -> None:
        self.token = token
        self.user = user
        self.application_id = application_id
        self.identified: list[dict[str, Any]] = []
        """Each IDENTIFY's ``d``, without the token."""
        self.refused_intents: list[int] = []
        """Intents of IDENTIFYs refused for asking a privileged intent."""
        self.resumed = 0
        """How many RESUMEs continued a session."""
        self.heartbeats = 0
        self.delivered: list[dict[str, Any]] = []
        self.undelivered: list[dict[str, Any]] = []
        """Interactions dispatched while no session was connected (Discord fails them)."""
        self.most_connected = 0
        self._sessions: dict[str, _Session] = {}
        self._connected: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._changed = threading.Condition()
        self._server_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self._ids = itertools.count(1)

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        assert self._server_loop is not None, "the fake Gateway is not started"
        return self._server_loop

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self._port}"

    @property
    def connected(self) -> int:
        """How many sessions are connected now (READY or RESUMED, socket open)."""
        with self._changed:
            return len(self._connected)

    # running

    def start(self) -> FakeGateway:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self._port = int(sock.getsockname()[1])
        started = threading.Event()
        self._server_loop = loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            app = web.Application()
            app.router.add_get("/", self._socket)
            runner = web.AppRunner(app, handle_signals=False, access_log=None)
            loop.run_until_complete(runner.setup())
            loop.run_until_complete(web.SockSite(runner, sock).start())
            started.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="fake-discord-gateway", daemon=True)
        self._thread.start()
        if not started.wait(WAIT):
            raise RuntimeError("the fake Discord Gateway did not start")
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._run(self._cut_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(WAIT)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(WAIT)

    async def _on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self._loop))

    # what tests do

    async def dispatch(self, interaction: dict[str, Any]) -> bool:
        """Send ``INTERACTION_CREATE`` to the connected session; False (and recorded in
        ``undelivered``) when none is connected."""
        return await self._on_loop(self._dispatch(interaction))

    def drop(self) -> int:
        """Cut every connected socket without a close frame (a network loss); how many were cut."""
        return self._run(self._cut_all())

    def reconnect(self) -> int:
        """Ask every connected session to reconnect (op 7); how many were asked."""
        return self._run(self._send_all({"op": 7, "d": None}))

    def wait_for(self, found: Callable[[FakeGateway], T | None], timeout: float = WAIT) -> T:
        """Block until ``found(self)`` returns something truthy, and return it."""
        result: list[T] = []

        def check() -> bool:
            value = found(self)
            if value:
                result.append(value)
            return bool(value)

        with self._changed:
            if not self._changed.wait_for(check, timeout):
                raise AssertionError(
                    f"the fake Discord Gateway did not get there: {len(self.identified)} IDENTIFY, "
                    f"{self.resumed} RESUME, {len(self._connected)} connected"
                )
        return result[0]

    async def until(self, found: Callable[[FakeGateway], T | None], timeout: float = WAIT) -> T:
        """``wait_for`` without blocking the test's event loop."""
        return await asyncio.to_thread(self.wait_for, found, timeout)

    async def session_up(self) -> None:
        """Once a session is connected."""
        await self.until(lambda g: len(g._connected) >= 1)

    # the server

    def _notify(self) -> None:
        with self._changed:
            self.most_connected = max(self.most_connected, len(self._connected))
            self._changed.notify_all()

    async def _dispatch(self, interaction: dict[str, Any]) -> bool:
        with self._changed:
            live = list(self._connected)
        if not live:
            with self._changed:
                self.undelivered.append(interaction)
            self._notify()
            return False
        connection = live[0]
        assert connection.session is not None
        await connection.send(connection.session.event("INTERACTION_CREATE", interaction))
        with self._changed:
            self.delivered.append(interaction)
        self._notify()
        return True

    async def _cut_all(self) -> int:
        with self._changed:
            cut = list(self._open)
        for connection in cut:
            if connection.transport is not None:
                connection.transport.close()
        return len(cut)

    async def _send_all(self, payload: dict[str, Any]) -> int:
        with self._changed:
            live = list(self._connected)
        for connection in live:
            await connection.send(payload)
        return len(live)

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        query = request.query
        if query.get("encoding", "json") != "json" or query.get("v") != "10":
            raise web.HTTPBadRequest(text="this fake speaks encoding=json, v=10")
        if query.get("compress") not in (None, "zlib-stream"):
            raise web.HTTPBadRequest(text=f"unsupported compress={query.get('compress')}")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        compress = zlib.compressobj() if query.get("compress") == "zlib-stream" else None
        connection = _Connection(ws, request.transport, compress)
        with self._changed:
            self._open.add(connection)
        try:
            await connection.send({"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": HEARTBEAT_MS}})
            async for message in ws:
                if message.type is not WSMsgType.TEXT:
                    continue
                payload = json.loads(message.data)
                await self._received(connection, payload.get("op"), payload.get("d"))
        finally:
            with self._changed:
                self._open.discard(connection)
                if connection in self._connected:
                    self._connected.remove(connection)
            self._notify()
        return ws

    async def _received(self, connection: _Connection, op: Any, data: Any) -> None:
        if op == 1:
            with self._changed:
                self.heartbeats += 1
            await connection.send({"op": 11, "s": None, "t": None, "d": None})
        elif op == 2:
            await self._identify(connection, data)
        elif op == 6:
            await self._resume(connection, data)

    async def _identify(self, connection: _Connection, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await connection.ws.close(code=4004, message=b"Authentication failed.")
            return
        intents = int(data.get("intents", 0))
        if any(intents & bit for bit in PRIVILEGED_INTENTS):
            with self._changed:
                self.refused_intents.append(intents)
            await connection.ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        session = _Session(f"fake-session-{next(self._ids)}-{secrets.token_hex(4)}")
        ready = {
            "v": 10,
            "user": self.user,
            "guilds": [],
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": self.url,
            "application": {"id": self.application_id, "flags": 0},
        }
        await connection.send(session.event("READY", ready))
        with self._changed:
            self._sessions[session.id] = session
            self.identified.append({k: v for k, v in data.items() if k != "token"})
            connection.session = session
            self._connected.append(connection)
        self._notify()

    async def _resume(self, connection: _Connection, data: dict[str, Any]) -> None:
        session = self._sessions.get(str(data.get("session_id")))
        if data.get("token") != self.token or session is None:
            await connection.send({"op": 9, "s": None, "t": None, "d": False})
            return
        missed = [event for event in session.events if event["s"] > int(data.get("seq") or 0)]
        for event in missed:
            await connection.send(event)
        await connection.send(session.event("RESUMED", {}))
        with self._changed:
            self.resumed += 1
            connection.session = session
            self._connected.append(connection)
        self._notify()
