"""What the benchmarks share: an embedded Redis, gateway child processes (one, or ``--workers N``),
many concurrent ``elicit`` calls from one process, answers posted the way a browser posts them,
and the arithmetic of the figures. Run by hand; pytest does not collect ``tests/bench``."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import re
import secrets
import shlex
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Literal, TypeVar
from urllib.parse import urlencode, urlsplit

import httpx
import httpx2
import mcp_types as types
import psutil
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from gateway.core.embedded import free_port

Era = Literal["legacy", "2026-07-28"]
ERAS: tuple[Era, ...] = ("legacy", "2026-07-28")

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: gateway subprocesses run ``python -m gateway.cli`` from here."""

FORM_LINK = re.compile(r"(https?://[^\s;]+/f/[A-Za-z0-9._~-]+)")
"""The form link in a waiting call's progress message."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
ANSWER = {"hg-action": "accept", "f.approved": "true"}
"""What the benchmark's "person" posts to every form."""

GATEWAY_TIMEOUT = 3600
"""HUMANGATE_ANONYMOUS_TIMEOUT of benchmark gateways: nothing expires mid-run."""

START_TIMEOUT = 60.0
"""Seconds a gateway may take to answer /healthz."""

STEP_TIMEOUT = 600.0
"""Seconds one batch of calls may take to start waiting, or one burst of answers to arrive."""

RUN_ID = secrets.token_hex(4)
"""Makes every message unique across runs, so no call re-attaches to an older Human Function."""

WAITING_GAUGE = re.compile(r"^humangate_waiting_calls (\S+)$", re.MULTILINE)


class ClosingSessionNoise(logging.Filter):
    """Counts and hides the SDK client's "Error parsing SSE message" tracebacks.

    A legacy session that is being closed can still receive an event on a stream whose reader is
    gone; the SDK logs that with a traceback and carries on. Hundreds of them would bury the figures.
    """

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Error parsing SSE message"):
            self.hidden += 1
            return False
        return True


SSE_NOISE = ClosingSessionNoise()


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through every finally: the children are stopped


def exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM unwind the benchmark like Ctrl-C, so every child process it started is stopped."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


T = TypeVar("T")


def measure(run: Coroutine[Any, Any, T]) -> T | None:
    """Run a benchmark: SIGTERM unwinds it like Ctrl-C, the SDK's closing-stream noise is muted;
    ``None`` (after saying why on stderr) when it could not measure."""
    exit_cleanly_on_sigterm()
    logging.getLogger("mcp.client.streamable_http").addFilter(SSE_NOISE)
    try:
        return asyncio.run(run)
    except BenchError as exc:
        note(f"benchmark failed: {exc}")
        return None


def print_header(command: str) -> None:
    """The command and the machine's state, the first lines of every benchmark's table."""
    out(f"command: {command}")
    out(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def print_figures(script: str, figures: dict[str, Any], width: int = 34) -> None:
    """A benchmark's figures: the header (``python <script> <its arguments>``), one line a figure,
    then all of them as one JSON line for tools."""
    print_header(shlex.join(["python", script, *sys.argv[1:]]))
    for name, value in figures.items():
        out(f"{name:{width}} {value}")
    out(json.dumps(figures))


class BenchError(RuntimeError):
    """The benchmark could not take a measurement (the gateway misbehaved or timed out)."""


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def note(line: str) -> None:
    """Progress of the run, on stderr so stdout holds only the figures."""
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {line}\n")
    sys.stderr.flush()


# --- processes ---------------------------------------------------------------------------------


@dataclass
class Gateway:
    """A ``humangate serve --worker`` child process (and its children) in its own process group."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def ps(self) -> psutil.Process:
        return psutil.Process(self.process.pid)

    def tree(self) -> list[psutil.Process]:
        """The gateway process and its children, but not the embedded Redis."""
        ps = self.ps
        return [ps, *(c for c in ps.children(recursive=True) if "redis" not in c.name())]

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                kill_group(self.process)

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def gateway_env(redis_url: str, port: int, data_dir: Path, poll_interval: float | None) -> dict[str, str]:
    drop = ("HUMANGATE_", "SLACK_", "DISCORD_", "TEAMS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env |= {
        "HUMANGATE_REDIS_URL": redis_url,
        "HUMANGATE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "HUMANGATE_DATA_DIR": str(data_dir),
        "HUMANGATE_ANONYMOUS_TIMEOUT": str(GATEWAY_TIMEOUT),
        # One benchmark client stands for thousands of agents: the per-caller limits stay out of the way.
        "HUMANGATE_ANONYMOUS_RATE_LIMIT": "100000000",
        "HUMANGATE_ANONYMOUS_MAX_PENDING": "100000000",
        "HUMANGATE_ANONYMOUS_MAX_SESSIONS": "100000000",
        "HUMANGATE_MAX_KEPT_BYTES_ANONYMOUS": str(2**40),  # 10,000 waiting calls keep ~25 MiB
    }
    if poll_interval is not None:
        env["HUMANGATE_POLL_INTERVAL"] = str(poll_interval)
    return env


def spawn(
    args: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``args`` in a process group of its own (it and its children are stopped together),
    output to ``log``; the caller stops it."""
    with log.open("wb") as sink:
        return subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of ``process`` (as an OOM killer would) and reap it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def spawn_gateway(args: list[str], port: int, cwd: Path, env: dict[str, str], log: Path) -> Gateway:
    """Start ``args`` (a ``serve`` command on ``port``) with ``spawn``; the caller stops it."""
    return Gateway(f"http://127.0.0.1:{port}", spawn(args, cwd, log, env), log)


async def wait_ready(gateway: Gateway, name: str) -> None:
    """Until ``/healthz`` answers 200; ``BenchError`` with the log's tail if it exits or is late."""
    deadline = time.monotonic() + START_TIMEOUT
    async with httpx.AsyncClient(timeout=2) as http:
        while True:
            if gateway.process.poll() is not None:
                raise BenchError(f"gateway {name} exited early:\n{gateway.tail()}")
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"{gateway.url}/healthz")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise BenchError(f"gateway {name} did not start:\n{gateway.tail()}")
            await asyncio.sleep(0.05)  # readiness polling of a child process, bounded


def start_serve(
    redis_url: str,
    work_dir: Path,
    name: str,
    *,
    worker: bool = True,
    workers: int = 1,
    poll_interval: float | None = None,
    env: Mapping[str, str] | None = None,
) -> Gateway:
    """Spawn ``humangate serve`` on a free port (``env`` on top of ``gateway_env``); the caller waits
    for it (``wait_ready``) and stops it."""
    port = free_port()
    args = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--workers", str(workers)]
    args.append("--worker" if worker else "--no-worker")
    full_env = gateway_env(redis_url, port, work_dir / f"data-{name}", poll_interval) | dict(env or {})
    return spawn_gateway(args, port, ROOT, full_env, work_dir / f"gateway-{name}.log")


def monitor_commands(redis_url: str, seconds: float, counted: Callable[[str], bool]) -> tuple[int, int]:
    """(commands ``counted`` picks, all commands) Redis ran in ``seconds``, by ``MONITOR`` (a Lua
    script's inner commands counted too)."""
    client = SyncRedis.from_url(redis_url)
    picked = total = 0
    deadline = time.monotonic() + seconds
    with client.monitor() as monitor:  # type: ignore[no-untyped-call]
        for entry in monitor.listen():
            if time.monotonic() > deadline:
                break
            command = entry["command"]
            if "MONITOR" in command.upper():
                continue
            total += 1
            picked += counted(command)
    client.close()
    return picked, total


@contextlib.asynccontextmanager
async def running_gateway(
    redis_url: str, work_dir: Path, name: str, poll_interval: float | None = None, workers: int = 1
) -> AsyncIterator[Gateway]:
    """A fresh gateway for one part of a benchmark; always stopped on exit."""
    gateway = start_serve(redis_url, work_dir, name, workers=workers, poll_interval=poll_interval)
    try:
        await wait_ready(gateway, name)
        yield gateway
    except BaseException:
        note(f"gateway {name} log tail:\n{gateway.tail()}")
        raise
    finally:
        gateway.stop()


async def until(what: str, check: Any, timeout: float = STEP_TIMEOUT) -> None:
    """Poll ``check()`` (a plain or an async condition) until it is true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await _holds(check()):
        if time.monotonic() > deadline:
            raise BenchError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)  # polling an external condition with a deadline


async def _holds(result: Any) -> bool:
    return bool(await result) if inspect.isawaitable(result) else bool(result)


async def waiting_gauge(http: httpx.AsyncClient, gateway: Gateway) -> int:
    """The gateway's own count of tool calls waiting right now (``/metrics``, one process)."""
    match = WAITING_GAUGE.search((await http.get(f"{gateway.url}/metrics")).text)
    return int(float(match.group(1))) if match else 0


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += float(times.user + times.system)
    return total


async def rss_now(processes: list[psutil.Process], samples: int = 5) -> int:
    """Median (over ``samples`` readings 0.2 s apart) of the processes' summed RSS, in bytes."""
    values = []
    for _ in range(samples):
        values.append(sum(p.memory_info().rss for p in processes))
        await asyncio.sleep(0.2)  # spacing measurement samples
    return int(statistics.median(values))


async def command_counts(redis: Redis) -> dict[str, int]:
    stats: dict[str, dict[str, Any]] = await redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 200 values is the 198th smallest)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


# --- MCP calls ---------------------------------------------------------------------------------


@dataclass(eq=False)
class Call:
    """One ``elicit`` call: its form link once it waits, and when its result arrived."""

    message: str
    linked: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    form_url: str = ""
    post_seconds: float = 0.0
    finished_at: float = 0.0
    text: str = ""
    error: str | None = None

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.form_url and message:
            match = FORM_LINK.search(message)
            if match:
                self.form_url = match.group(1)
                self.linked.set()


class Fleet:
    """Many concurrent ``elicit`` calls from this one process, over one unlimited httpx2 client.

    ``2026-07-28``: one ``Client``, every call one POST on it. ``legacy`` (2025-11-25): one
    ``Client`` session per call, as when each waiting call belongs to a different agent.
    """

    def __init__(self, base_url: str, era: Era) -> None:
        self.mcp_url = f"{base_url}/mcp"
        self.era = era
        self.tasks: set[asyncio.Task[None]] = set()
        self._stack = contextlib.AsyncExitStack()
        self._shared: Client | None = None
        self.http = httpx2.AsyncClient(
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=None),
            timeout=httpx2.Timeout(30, read=900),
        )

    async def __aenter__(self) -> Fleet:
        await self._stack.enter_async_context(self.http)
        if self.era != "legacy":
            client = Client(streamable_http_client(self.mcp_url, http_client=self.http), mode=self.era)
            self._shared = await self._stack.enter_async_context(client)
            await self._shared.list_tools()  # else the first result costs a tools/list round trip
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self._stack.aclose()

    def start(self, call: Call) -> None:
        task = asyncio.create_task(self._run(call))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, call: Call) -> None:
        try:
            if self._shared is not None:
                await self._call(self._shared, call)
            else:
                transport = streamable_http_client(self.mcp_url, http_client=self.http)
                async with Client(transport, mode="legacy") as client:
                    await client.list_tools()
                    await self._call(client, call)
        except Exception as exc:
            call.error = f"{type(exc).__name__}: {exc}"
        finally:
            call.linked.set()
            call.done.set()

    async def _call(self, client: Client, call: Call) -> None:
        arguments = {"message": call.message, "schema": SCHEMA, "uiType": "web"}
        result = await client.call_tool("elicit", arguments, progress_callback=call.on_progress)
        call.finished_at = time.perf_counter()
        content = result.content[0] if result.content else None
        call.text = content.text if isinstance(content, types.TextContent) else repr(result)


async def open_calls(
    fleet: Fleet, gateway: Gateway, http: httpx.AsyncClient, n: int, batch: int, label: str
) -> tuple[list[Call], list[str]]:
    """Open ``n`` calls in batches: (the calls now waiting, why the others failed to open).

    Returns once each call of each batch got its first progress message (with its form link),
    which the gateway sends once the call is registered as waiting.
    """
    calls: list[Call] = []
    failures: list[str] = []
    for start in range(0, n, batch):
        chunk = [Call(f"bench {RUN_ID} {label} #{i}") for i in range(start, min(n, start + batch))]
        for call in chunk:
            fleet.start(call)
        try:
            await asyncio.wait_for(asyncio.gather(*(c.linked.wait() for c in chunk)), STEP_TIMEOUT)
        except TimeoutError:
            raise BenchError(f"{label}: calls {start}..{start + len(chunk)} did not start waiting") from None
        for call in chunk:
            if call.form_url and not call.done.is_set():
                calls.append(call)
            else:
                failures.append(call.error or call.text[:120] or "ended without a form link")
    if not calls:
        raise BenchError(f"{label}: no call started waiting, first failure: {failures[0]}")
    if failures:
        note(f"{label}: {len(failures)} call(s) failed to open, first: {failures[0]}")

    return calls, failures


def form_post(call: Call) -> bytes:
    """The whole HTTP request a browser sends for the answer, ready to write in one go."""
    url = urlsplit(call.form_url)
    body = urlencode(ANSWER).encode()
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def connect(call: Call) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    url = urlsplit(call.form_url)
    return await asyncio.open_connection(url.hostname, url.port)


async def outcome(
    call: Call, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sent: float
) -> float | str:
    """Read the POST's response, then wait for the call's result: seconds from the POST to the
    result, or what went wrong."""
    try:
        status_line = await asyncio.wait_for(reader.readline(), STEP_TIMEOUT)
        await asyncio.wait_for(reader.read(), STEP_TIMEOUT)  # "Connection: close": ends with EOF
    except (OSError, TimeoutError) as exc:
        return f"form post failed: {exc!r}"
    finally:
        writer.close()
    call.post_seconds = time.perf_counter() - sent
    parts = status_line.split()
    if len(parts) < 2 or parts[1] != b"303":
        return f"form post got {status_line.decode(errors='replace').strip()!r}"
    try:
        await asyncio.wait_for(call.done.wait(), STEP_TIMEOUT)
    except TimeoutError:
        return f"no result {STEP_TIMEOUT:.0f} s after the answer"
    if call.error or not call.text.startswith("User provided"):
        return f"result: {call.error or call.text[:120]}"
    return call.finished_at - sent


async def answer_all(calls: list[Call], concurrency: int | None) -> tuple[list[float], list[str]]:
    """Answer ``calls`` in rounds of ``concurrency`` (None: all in one burst): (latencies, errors).

    Each round opens its connections first and then writes every prepared request in one tight
    loop, so the POSTs leave together and the clock starts when the request is sent: connection
    set-up and the client's HTTP library are not part of the figure.
    """
    size = concurrency or len(calls) or 1
    outcomes: list[float | str] = []
    for start in range(0, len(calls), size):
        chunk = calls[start : start + size]
        connections = await asyncio.gather(*(connect(c) for c in chunk))
        pending = []
        for call, (reader, writer) in zip(chunk, connections, strict=True):
            sent = time.perf_counter()
            writer.write(form_post(call))
            pending.append(outcome(call, reader, writer, sent))
        outcomes.extend(await asyncio.gather(*pending))
    return [o for o in outcomes if isinstance(o, float)], [o for o in outcomes if isinstance(o, str)]


async def warm_up(fleet: Fleet, gateway: Gateway, http: httpx.AsyncClient, n: int) -> None:
    """Run ``n`` calls end to end, so lazy imports and first-use allocations are behind us."""
    if n > 0:
        calls, failures = await open_calls(fleet, gateway, http, n, n, "warmup")
        _, errors = await answer_all(calls, None)
        if failures or errors:
            raise BenchError(
                f"warm-up: {len(failures) + len(errors)} call(s) failed: {(failures + errors)[0]}"
            )
