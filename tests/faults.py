"""Faults injected from outside, for the fault tests: a TCP proxy that breaks the network path to a
server on demand, and a Redis server that can be stopped, frozen and restarted on its port.

``TcpProxy`` sits on 127.0.0.1 in front of a server; clients connect to ``proxy.url``:

- ``refuse()``: every connection is dropped and new ones are closed at once (a server that is down);
- ``blackhole()``: connections stay open but every byte is silently dropped both ways, and new
  connections are accepted and ignored (packets lost on a dead network path: a half-open
  connection, which only timeouts and keepalive can notice);
- ``heal()``: new connections pass again; those blackholed stay dead, as a half-open TCP connection
  does, until their client notices and gives up on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from gateway.core.embedded import EmbeddedRedis, free_port


class Mode(enum.Enum):
    PASS = "pass"
    REFUSE = "refuse"
    BLACKHOLE = "blackhole"


class TcpProxy:
    """See the module docstring. Runs its own event loop in a daemon thread."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.mode = Mode.PASS
        self._writers: set[asyncio.StreamWriter] = set()
        self._dead: set[asyncio.StreamWriter] = set()
        self._sockets: set[socket.socket] = set()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> TcpProxy:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the fault proxy did not start")
        return self

    def stop(self) -> None:
        self._call(self._close_all)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def refuse(self) -> None:
        self.mode = Mode.REFUSE
        self._call(self._close_all)

    def blackhole(self) -> None:
        self.mode = Mode.BLACKHOLE
        self._call(lambda: self._dead.update(self._writers))

    def heal(self) -> None:
        self.mode = Mode.PASS

    def _call(self, function: Callable[[], object]) -> None:
        done = threading.Event()

        def run() -> None:
            try:
                function()
            finally:
                done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait(10)

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        self._dead.clear()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        listener = socket.create_server(("127.0.0.1", self.port))
        listener.setblocking(False)
        self._loop.add_reader(listener.fileno(), self._accept, listener)
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.remove_reader(listener.fileno())
            listener.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._close_all()  # also what the cancelled tasks had just opened
            for conn in self._sockets:
                conn.close()  # accepted, but its task was cancelled before it wrapped the socket
            self._sockets.clear()
            self._loop.run_until_complete(asyncio.sleep(0))  # let the aborted transports close
            self._loop.close()

    def _accept(self, listener: socket.socket) -> None:
        # Accepted here, synchronously, rather than through asyncio.start_server or sock_accept: a
        # task cancelled between accepting a connection and running drops the accepted socket
        # unclosed. Every accepted socket is tracked from the start; stopping closes what is open.
        self._sockets = {conn for conn in self._sockets if conn.fileno() != -1}
        while True:
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            conn.setblocking(False)
            self._sockets.add(conn)
            self._loop.create_task(self._client(conn))

    async def _client(self, conn: socket.socket) -> None:
        if self.mode is Mode.REFUSE:
            conn.close()
            return
        reader, writer = await asyncio.open_connection(sock=conn)
        self._writers.add(writer)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            self._writers.discard(writer)
            writer.transport.abort()
            return
        self._writers.add(upstream_writer)
        if self.mode is Mode.BLACKHOLE:
            self._dead.update((writer, upstream_writer))
        with contextlib.suppress(asyncio.CancelledError):  # the proxy stopping
            await asyncio.gather(
                self._pipe(reader, upstream_writer),
                self._pipe(upstream_reader, writer),
                return_exceptions=True,
            )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if writer not in self._dead:
                    writer.write(data)
                    await writer.drain()
        finally:
            self._writers.discard(writer)
            writer.transport.abort()


@contextlib.contextmanager
def proxy_to(port: int) -> Iterator[TcpProxy]:
    proxy = TcpProxy(port).start()
    try:
        yield proxy
    finally:
        proxy.stop()


class RestartableRedis:
    """A persistent (AOF) redis-server of the test's own, on a fixed port, that tests stop, freeze
    and restart with its data."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.server: EmbeddedRedis | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RestartableRedis:
        self.server = EmbeddedRedis(self.data_dir, port=self.port).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def freeze(self) -> None:
        """SIGSTOP the server: connections stay open, nothing answers."""
        assert self.server is not None and self.server.process is not None
        os.kill(self.server.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.server is not None and self.server.process is not None
        os.kill(self.server.process.pid, signal.SIGCONT)


@contextlib.contextmanager
def restartable_redis(data_dir: Path) -> Iterator[RestartableRedis]:
    redis = RestartableRedis(data_dir).start()
    try:
        yield redis
    finally:
        with contextlib.suppress(Exception):
            redis.thaw()
        redis.stop()
