"""The base of the fake platform APIs (Slack, Discord): a real HTTP server on loopback that records
every request and answers through the platform fake's handler.

It runs a Starlette app under uvicorn in a thread of the test process, on a socket bound before the
thread starts (so there is no port race), and is reached over real HTTP by the real SDKs, in the test
process or in a gateway child process. Tests wait on what it received with ``wait_for`` (a condition
variable with a deadline, never a sleep) and make it misbehave with ``script`` (a 429, a 500...).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

WAIT = 30.0
"""Seconds a test waits for a fake to receive what it expects before failing."""

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    """Lower-case names."""
    body: bytes
    at: float = field(default_factory=time.time)
    """When the fake received it (seconds since the epoch)."""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def form(self) -> dict[str, str]:
        """An ``application/x-www-form-urlencoded`` body as a dict (last value wins)."""
        return dict(parse_qsl(self.body.decode(), keep_blank_values=True))

    def args(self) -> dict[str, Any]:
        """The call's arguments however they were sent: JSON, form-encoded, or in the query string."""
        kind = self.headers.get("content-type", "")
        if "json" in kind:
            body = self.json()
            return {**self.query, **(body if isinstance(body, dict) else {})}
        if "form" in kind:
            return {**self.query, **self.form()}
        return dict(self.query)


Handler = Callable[[Call], Awaitable[Response] | Response]


@dataclass
class _Scripted:
    method: str
    path: str
    response: Callable[[], Response]
    times: int


@dataclass
class FakeServer:
    """A recording HTTP server; ``handler`` answers every call not taken by a scripted response."""

    handler: Handler
    calls: list[Call] = field(default_factory=list)
    _scripted: list[_Scripted] = field(default_factory=list)
    _stalls: dict[tuple[str, str], threading.Event] = field(default_factory=dict)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def script(
        self,
        method: str,
        path: str,
        status: int,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        times: int = 1,
        text: str | None = None,
        media_type: str = "text/html",
    ) -> None:
        """Answer the next ``times`` calls to ``method path`` with this response instead: ``body`` as
        JSON, else ``text`` as ``media_type`` (an HTML error page of a proxy), else an empty body."""

        def respond() -> Response:
            if text is not None:
                return Response(text, status_code=status, headers=headers, media_type=media_type)
            if body is None:
                return Response(status_code=status, headers=headers)
            return JSONResponse(body, status_code=status, headers=headers)

        with self._changed:
            self._scripted.append(_Scripted(method.upper(), path, respond, times))

    def stall(self, method: str, path: str) -> threading.Event:
        """Handle calls to ``method path`` (the platform acts on them) but hold back every reply
        until the returned event is set: the moment a client can die without knowing the outcome."""
        release = threading.Event()
        with self._changed:
            self._stalls[(method.upper(), path)] = release
        return release

    def calls_to(self, path: str, method: str | None = None) -> list[Call]:
        with self._changed:
            return [c for c in self.calls if c.path == path and (method is None or c.method == method)]

    def wait_for_sync(self, found: Callable[[list[Call]], T | None], timeout: float = WAIT) -> T:
        """Block until ``found(calls)`` returns something truthy, and return it."""
        result: list[T] = []

        def check() -> bool:
            value = found(list(self.calls))
            if value:
                result.append(value)
            return bool(value)

        with self._changed:
            if not self._changed.wait_for(check, timeout):
                paths = [f"{c.method} {c.path}" for c in self.calls]
                raise AssertionError(f"the fake API did not receive what was expected; it got {paths}")
        return result[0]

    async def wait_for(self, found: Callable[[list[Call]], T | None], timeout: float = WAIT) -> T:
        """``wait_for_sync`` without blocking the test's event loop."""
        return await asyncio.to_thread(self.wait_for_sync, found, timeout)

    async def wait_for_call(self, path: str, count: int = 1, method: str | None = None) -> list[Call]:
        """The first ``count`` calls to ``path``, once that many have arrived."""

        def enough(calls: list[Call]) -> list[Call] | None:
            matching = [c for c in calls if c.path == path and (method is None or c.method == method)]
            return matching[:count] if len(matching) >= count else None

        return await self.wait_for(enough)

    async def _endpoint(self, request: Request) -> Response:
        call = Call(
            method=request.method,
            path=request.url.path,
            query=dict(request.query_params),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=await request.body(),
        )
        with self._changed:
            self.calls.append(call)
            due = (s for s in self._scripted if (s.method, s.path) == (call.method, call.path) and s.times)
            scripted = next(due, None)
            if scripted is not None:
                scripted.times -= 1
            self._changed.notify_all()
        if scripted is not None:
            return scripted.response()
        response = self.handler(call)
        response = await response if isinstance(response, Awaitable) else response
        with self._changed:  # the handler changed the fake's state (a stored message): look again
            self._changed.notify_all()
        release = self._stalls.get((call.method, call.path))
        if release is not None:
            await asyncio.to_thread(release.wait, WAIT)
        return response

    def start(self) -> FakeServer:
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        app = Starlette(routes=[Route("/{path:path}", self._endpoint, methods=methods)])
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self._port = int(sock.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-api", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + WAIT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake API server did not start")
            time.sleep(0.01)  # readiness polling of a starting server, bounded by the deadline
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(WAIT)

    @contextmanager
    def running(self) -> Iterator[FakeServer]:
        self.start()
        try:
            yield self
        finally:
            self.stop()
