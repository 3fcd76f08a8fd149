"""``humangate serve``: the gateway under uvicorn (one process or ``--workers N`` on one port), with
an embedded Redis and worker thread if no Redis URL is set.

Start-up fails fast, before anything is started, when the port is taken or Redis would evict
data. With ``--workers N`` this process is the supervisor: it owns the socket, the embedded Redis
and the worker thread, and N gateway processes serve on the shared socket.

Form links start with ``HUMANGATE_PUBLIC_URL``; unset, with the address ``serve`` listens on, so
``serve --port 8123`` hands out links on port 8123. "humangate running on ..." is logged once the
gateway accepts connections: after uvicorn's start-up (every process's, with ``--workers N``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import Protocol
from urllib.parse import urlsplit

import uvicorn
from uvicorn.supervisors import Multiprocess

from channels.registry import configured_channels
from gateway.core import redis_check
from gateway.core.embedded import EmbeddedRedis
from gateway.core.local import url_file
from gateway.core.policies import log_operator_warnings, startup_check
from gateway.core.redis_client import is_unavailable, sync_redis
from gateway.core.redis_target import RedisTarget
from gateway.logs import install_redaction
from schemas.settings import Settings, get_settings, override_settings

logger = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_SECONDS = 5
"""How long uvicorn lets open requests finish on shutdown. Waiting tool calls end at once with a
"restarting, call again to re-attach" result, so they finish well within it."""

WORKER_HEALTHCHECK_SECONDS = 30
"""How long ``--workers N``'s parent waits for a process to answer its health ping (uvicorn's default
is 5 s). Importing the app takes several seconds on a loaded machine; killed for that, a process
never started and ``serve --workers`` kept restarting it."""

APP_FACTORY = "gateway.app:served_app"
"""What every gateway process (one, or each of ``--workers N``) imports and calls to get its app."""


class Stoppable(Protocol):
    """What runs beside the gateway in this process (the worker thread): stopped on the way out."""

    def stop(self) -> None: ...


StartWorker = Callable[[RedisTarget, list[str]], Stoppable]
"""Starts a worker on the queues of the channels named, in this process. The entry point
(``gateway.cli``) passes it in: the gateway itself does not import the workers."""


class StartError(Exception):
    """Why ``serve`` cannot start, in plain words (printed, exit status 2)."""


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts, so a busy port fails at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StartError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}. Another program (perhaps another "
            f"humangate serve) uses that port: stop it, or choose another port with --port"
        ) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def listening(host: str, port: int, workers: int) -> str:
    """The line that says where the gateway listens (uvicorn prints its own only when it binds the
    socket itself; here ``bind`` does)."""
    shown = f"[{host}]" if ":" in host else host
    processes = f" in {workers} processes" if workers > 1 else ""
    return f"humangate running on http://{shown}:{port}{processes} (MCP at /mcp; press CTRL+C to quit)"


WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
"""Addresses that mean "every interface", and the one a link can name instead (this machine's)."""


def bound_url(host: str, port: int) -> str:
    """``http://HOST:PORT`` of where ``serve`` listens, as a link can name it."""
    host = WILDCARD_HOSTS.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def with_public_url(settings: Settings, host: str, port: int) -> Settings:
    """``settings`` whose ``public_url`` is where ``serve`` listens, when ``HUMANGATE_PUBLIC_URL`` is
    not set; when it is set and names another address, that is said once (a proxy in front, or a
    mistake)."""
    here = bound_url(host, port)
    if "public_url" not in settings.model_fields_set:
        if host in WILDCARD_HOSTS:
            logger.info(
                "form links start with %s (HUMANGATE_PUBLIC_URL is not set): set it to the address "
                "people reach this machine at",
                here,
            )
        return settings.model_copy(update={"public_url": here})
    if urlsplit(settings.public_url).netloc != urlsplit(here).netloc:
        logger.info(
            "form links start with HUMANGATE_PUBLIC_URL %s, not %s where serve listens",
            settings.public_base,
            here,
        )
    return settings


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, saying where it listens once its start-up is done (it accepts connections)."""

    def __init__(self, config: uvicorn.Config, line: str) -> None:
        super().__init__(config)
        self.line = line

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            logger.info("%s", self.line)


class AnnouncingSupervisor(Multiprocess):
    """uvicorn's supervisor of ``--workers N``, saying where they listen once every one has started."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], line: str) -> None:
        super().__init__(config, sockets)
        self.line = line

    def init_processes(self) -> None:
        super().init_processes()
        timeout = self.config.timeout_worker_healthcheck
        if all(process.wait_until_ready(timeout, self.should_exit) for process in self.processes):
            logger.info("%s", self.line)


def check_redis(target: RedisTarget) -> None:
    """Refuse a Redis that may evict data; warn when it keeps nothing on disk. An unreachable Redis
    is not refused: the gateway starts, reports "unavailable" and works once Redis is back."""
    try:
        with sync_redis(target) as client:
            problem, warning = redis_check.check(client)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        logger.warning("Redis (%s) is unreachable (%s); starting anyway", target.describe(), exc)
        return
    if problem:
        raise StartError(problem)
    if warning:
        logger.warning("%s", warning)


def serve(
    host: str,
    port: int,
    with_worker: bool | None,
    workers: int = 1,
    *,
    start_worker: StartWorker,
) -> int:
    """Run the gateway until SIGTERM/SIGINT; 2 when it cannot start (the reason on stderr).
    ``start_worker`` runs the worker in this process when ``with_worker`` (by default: with the
    embedded Redis) asks for one."""
    settings = get_settings()
    checked = startup_check(settings)
    policies, refusal = checked.policies, checked.refusal()
    if refusal is not None:
        sys.stderr.write(f"humangate serve: not starting: {refusal}\n")
        return 2
    try:
        sock = bind(host, port)
    except StartError as exc:
        sys.stderr.write(f"humangate serve: {exc}\n")
        return 2
    if policies.policies:
        logger.info("policies from %s: %s", policies.source, ", ".join(policies.names))
    settings = with_public_url(settings, host, port)
    override_settings(settings)
    # Gateway processes of --workers N read their settings from the environment.
    os.environ["HUMANGATE_PUBLIC_URL"] = settings.public_url
    embedded: EmbeddedRedis | None = None
    worker: Stoppable | None = None
    try:
        if not settings.external_redis:
            embedded = EmbeddedRedis(settings.data_dir).start()
            url_file(settings.data_dir).write_text(embedded.url)
            settings = settings.model_copy(update={"redis_url": embedded.url})
            override_settings(settings)
            # Gateway processes of --workers N read their settings from the environment.
            os.environ["HUMANGATE_REDIS_URL"] = embedded.url
        target = RedisTarget.of(settings)
        check_redis(target)
        log_operator_warnings(checked, target)
        if with_worker if with_worker is not None else embedded is not None:
            worker = start_worker(target, configured_channels(settings))
        config = uvicorn.Config(
            APP_FACTORY,
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            log_config=None,  # keep our handlers (and their token redaction)
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
            timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
            # The client address that tells anonymous callers apart: X-Forwarded-For only from these.
            forwarded_allow_ips=",".join(settings.trusted_proxies),
        )
        install_redaction()
        # uvicorn re-raises the SIGTERM it caught once it has shut down; exiting through SystemExit
        # lets the finally below stop the worker and the embedded Redis instead of orphaning them.
        signal.signal(signal.SIGTERM, _exit_on_signal)
        line = listening(host, port, workers)
        if workers > 1:
            AnnouncingSupervisor(config, [sock], line).run()
        else:
            AnnouncingServer(config, line).run(sockets=[sock])
    except StartError as exc:
        sys.stderr.write(f"humangate serve: {exc}\n")
        return 2
    finally:
        if worker is not None:
            worker.stop()
        if embedded is not None:
            with contextlib.suppress(FileNotFoundError):
                url_file(settings.data_dir).unlink()
            embedded.stop()
        sock.close()
    return 0
