"""Benchmark one humangate gateway: answer latency, RSS per waiting call, Redis commands per call.

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_gateway.py --calls 200 --rss-calls 1000 --era 2026-07-28

It starts its own embedded Redis and, per part, a fresh ``humangate serve --worker`` on a free
loopback port, and stops all of them (whole process groups) when it ends, also on errors. See
``tests/bench/README.md`` for what each figure means.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

import httpx
import httpx2
import mcp_types as types
import psutil  # type: ignore[import-untyped]
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from redis.asyncio import Redis

from gateway.embedded import EmbeddedRedis, free_port

Era = Literal["legacy", "2026-07-28"]
ERAS: tuple[Era, ...] = ("legacy", "2026-07-28")

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the gateway subprocess runs ``python -m gateway.cli`` from here."""

FORM_LINK = re.compile(r"(https?://[^\s;]+/f/[A-Za-z0-9._~-]+)")
"""The form link in a waiting call's progress message."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
ANSWER = {"hg-action": "accept", "f.approved": "true"}
"""What the benchmark's "person" posts to every form."""

GATEWAY_TIMEOUT = 900
"""HUMANGATE_ANONYMOUS_TIMEOUT of the benchmark gateway: nothing expires mid-run."""

START_TIMEOUT = 60.0
"""Seconds a gateway may take to answer /healthz."""

STEP_TIMEOUT = 300.0
"""Seconds one batch of calls may take to start waiting, or one burst of answers to arrive."""

CLEANUP_CONCURRENCY = 100
"""Answers sent per round when releasing the calls of the RSS part (not measured)."""

LATENCY_TARGET_MS = 100.0
RSS_TARGET_KIB = 100.0
COMMANDS_TARGET = 13.0

QUEUE_KEY = "rq:queue:humangate-web"
STARTED_KEY = "rq:wip:humangate-web"
"""The RQ queue of web jobs and its started-job registry: a Redis window starts once both are empty,
so the delivery jobs of the calls just opened are not counted as their waiting cost."""

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
    """A ``humangate serve --worker`` child process in its own process group."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def ps(self) -> psutil.Process:
        return psutil.Process(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _gateway_env(redis_url: str, port: int, data_dir: Path, poll_interval: float | None) -> dict[str, str]:
    drop = ("HUMANGATE_", "SLACK_", "DISCORD_", "TEAMS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env |= {
        "HUMANGATE_REDIS_URL": redis_url,
        "HUMANGATE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "HUMANGATE_DATA_DIR": str(data_dir),
        "HUMANGATE_ANONYMOUS_TIMEOUT": str(GATEWAY_TIMEOUT),
    }
    if poll_interval is not None:
        env["HUMANGATE_POLL_INTERVAL"] = str(poll_interval)
    return env


@contextlib.asynccontextmanager
async def running_gateway(
    redis_url: str, work_dir: Path, name: str, poll_interval: float | None
) -> AsyncIterator[Gateway]:
    """A fresh gateway for one part of the benchmark; always stopped on exit."""
    port = free_port()
    log = work_dir / f"gateway-{name}.log"
    args = [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port), "--worker"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env=_gateway_env(redis_url, port, work_dir / f"data-{name}", poll_interval),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    gateway = Gateway(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                if process.poll() is not None:
                    raise BenchError(f"gateway exited early:\n{gateway.tail()}")
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(f"{gateway.url}/healthz")).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise BenchError(f"gateway did not start:\n{gateway.tail()}")
                await asyncio.sleep(0.05)  # readiness polling of a child process, bounded
        yield gateway
    except BaseException:
        note(f"gateway {name} log tail:\n{gateway.tail()}")
        raise
    finally:
        gateway.stop()


async def waiting_gauge(http: httpx.AsyncClient, gateway: Gateway) -> int:
    """The gateway's own count of tool calls waiting right now (``/metrics``)."""
    match = WAITING_GAUGE.search((await http.get(f"{gateway.url}/metrics")).text)
    return int(float(match.group(1))) if match else 0


async def until(what: str, check: Any, timeout: float = STEP_TIMEOUT) -> None:
    """Poll ``await check()`` until it is true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise BenchError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)  # polling an external condition with a deadline


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


RUN_ID = secrets.token_hex(4)
"""Makes every message unique across runs, so no call re-attaches to an older Human Function."""


async def open_calls(
    fleet: Fleet, gateway: Gateway, http: httpx.AsyncClient, n: int, batch: int, label: str
) -> tuple[list[Call], list[str]]:
    """Open ``n`` calls in batches: (the calls now waiting, why the others failed to open).

    Returns once each batch got its form links and the gateway counts every call still waiting.
    """
    before = await waiting_gauge(http, gateway)
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

    async def all_counted() -> bool:
        return await waiting_gauge(http, gateway) >= before + sum(not c.done.is_set() for c in calls)

    await until(f"the gateway to count {len(calls)} more waiting calls", all_counted)
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


# --- figures -----------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 200 values is the 198th smallest)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def latency_figures(calls: list[Call], answers: tuple[list[float], list[str]]) -> dict[str, Any]:
    """Percentiles of POST -> result, plus the POST round trip itself for comparison."""
    seconds, errors = answers
    ms = [s * 1000 for s in seconds]
    post_ms = [c.post_seconds * 1000 for c in calls if c.post_seconds]
    figures: dict[str, Any] = {"n": len(ms) + len(errors), "errors": len(errors)}
    if errors:
        figures["first_error"] = errors[0]
    if ms:
        figures |= {
            "p50_ms": round(percentile(ms, 50), 2),
            "p99_ms": round(percentile(ms, 99), 2),
            "max_ms": round(max(ms), 2),
        }
    if post_ms:
        figures |= {
            "post_p50_ms": round(percentile(post_ms, 50), 2),
            "post_p99_ms": round(percentile(post_ms, 99), 2),
        }
    return figures


async def rss_now(process: psutil.Process, samples: int = 5) -> int:
    """Median RSS in bytes over ``samples`` readings 0.2 s apart."""
    values = []
    for _ in range(samples):
        values.append(process.memory_info().rss)
        await asyncio.sleep(0.2)  # spacing measurement samples
    return int(statistics.median(values))


async def command_counts(redis: Redis) -> dict[str, int]:
    stats: dict[str, dict[str, Any]] = await redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


async def count_commands(redis: Redis, window: float) -> dict[str, int]:
    """Redis commands (per command) executed during the next ``window`` seconds."""
    before = await command_counts(redis)
    await asyncio.sleep(window)  # the measurement window itself
    after = await command_counts(redis)
    return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}


async def queue_drained(redis: Redis) -> bool:
    return int(await redis.llen(QUEUE_KEY)) == 0 and int(await redis.zcard(STARTED_KEY)) == 0


# --- parts -------------------------------------------------------------------------------------


@dataclass
class Options:
    calls: int
    rss_calls: int
    era: Era
    window: float
    batch: int
    warmup: int
    poll_interval: float | None
    parts: str
    json_path: Path | None


async def latency_and_commands(opts: Options, redis_url: str, redis: Redis, work_dir: Path) -> dict[str, Any]:
    """Parts (c) then (a) on one gateway in ``opts.era``."""
    figures: dict[str, Any] = {}
    async with (
        running_gateway(redis_url, work_dir, "a-c", opts.poll_interval) as gateway,
        Fleet(gateway.url, opts.era) as fleet,
        httpx.AsyncClient(
            timeout=STEP_TIMEOUT, limits=httpx.Limits(max_connections=None, max_keepalive_connections=None)
        ) as http,
    ):
        await warm_up(fleet, gateway, http, opts.warmup)
        if "c" in opts.parts:
            await until("the delivery queue to drain", lambda: queue_drained(redis))
            note(f"(c) idle baseline: {opts.window:.0f} s")
            idle = await count_commands(redis, opts.window)
        note(f"(a/c) opening {opts.calls} calls ({opts.era})")
        calls, open_failures = await open_calls(fleet, gateway, http, opts.calls, opts.batch, "burst")
        if "c" in opts.parts:
            await until("the delivery queue to drain", lambda: queue_drained(redis))
            note(f"(c) {opts.calls} calls waiting: {opts.window:.0f} s")
            held = await count_commands(redis, opts.window)
            figures["c"] = command_figures(idle, held, opts.calls, opts.window)
        if "a" in opts.parts:
            note(f"(a) answering {len(calls)} calls in one burst")
            figures["a_burst"] = await timed_answers(gateway, calls, None) | {
                "open_failures": len(open_failures)
            }
            note(f"(a) opening {opts.calls} more calls, then answering one at a time")
            calls, open_failures = await open_calls(
                fleet, gateway, http, opts.calls, opts.batch, "sequential"
            )
            figures["a_sequential"] = await timed_answers(gateway, calls, 1) | {
                "open_failures": len(open_failures)
            }
        else:
            await answer_all(calls, CLEANUP_CONCURRENCY)
    return figures


async def timed_answers(gateway: Gateway, calls: list[Call], concurrency: int | None) -> dict[str, Any]:
    """Answer ``calls``; latency figures plus the CPU seconds gateway and client spent meanwhile."""
    process = gateway.ps
    gateway_cpu, client_cpu, started = cpu_seconds(process), time.process_time(), time.perf_counter()
    figures = latency_figures(calls, await answer_all(calls, concurrency))
    figures["wall_s"] = round(time.perf_counter() - started, 2)
    figures["gateway_cpu_s"] = round(cpu_seconds(process) - gateway_cpu, 2)
    figures["client_cpu_s"] = round(time.process_time() - client_cpu, 2)
    return figures


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def command_figures(idle: dict[str, int], held: dict[str, int], n: int, window: float) -> dict[str, Any]:
    """(held - idle) / n / minutes, in total and for each command that changed."""
    scale = n * window / 60
    per_command = {
        name: round((held.get(name, 0) - idle.get(name, 0)) / scale, 3)
        for name in sorted(set(held) | set(idle))
        if held.get(name, 0) != idle.get(name, 0)
    }
    total = (sum(held.values()) - sum(idle.values())) / scale
    return {
        "n": n,
        "window_s": window,
        "per_call_per_min": round(total, 3),
        "by_command": per_command,
        "idle_total": sum(idle.values()),
        "held_total": sum(held.values()),
    }


async def rss_per_call(opts: Options, redis_url: str, work_dir: Path, era: Era) -> dict[str, Any]:
    """Part (b) in one era, on a fresh gateway (freed memory would hide a later era's cost)."""
    async with (
        running_gateway(redis_url, work_dir, f"b-{era}", opts.poll_interval) as gateway,
        Fleet(gateway.url, era) as fleet,
        httpx.AsyncClient(
            timeout=STEP_TIMEOUT, limits=httpx.Limits(max_connections=None, max_keepalive_connections=None)
        ) as http,
    ):
        process = gateway.ps
        await warm_up(fleet, gateway, http, opts.warmup)
        baseline = await rss_now(process)
        note(f"(b) {era}: baseline {baseline / 2**20:.1f} MiB, opening {opts.rss_calls} calls")
        client_cpu = time.process_time()
        started = time.perf_counter()
        calls, open_failures = await open_calls(
            fleet, gateway, http, opts.rss_calls, opts.batch, f"rss-{era}"
        )
        ramp_s = time.perf_counter() - started
        client_cpu = time.process_time() - client_cpu
        loaded = await rss_now(process)
        # A call that failed while held is no longer waiting (its memory is mostly freed again).
        waiting = sum(not c.done.is_set() for c in calls)
        note(f"(b) {era}: {loaded / 2**20:.1f} MiB with {waiting} waiting; releasing them")
        _, errors = await answer_all(calls, CLEANUP_CONCURRENCY)
    figures: dict[str, Any] = {
        "n": waiting,
        "opened": len(calls),
        "open_failures": len(open_failures),
        "baseline_mib": round(baseline / 2**20, 1),
        "loaded_mib": round(loaded / 2**20, 1),
        "kib_per_call": round((loaded - baseline) / 1024 / max(waiting, 1), 1),
        "ramp_up_s": round(ramp_s, 1),
        "client_cpu_s": round(client_cpu, 1),
        "release_errors": len(errors),
    }
    if errors:
        figures["first_release_error"] = errors[0]
    return figures


# --- report ------------------------------------------------------------------------------------


def rows(figures: dict[str, Any], era: Era) -> Iterator[tuple[str, str, str, bool]]:
    """(figure, value, target, passed) for the table."""
    for key, label in (("a_burst", "burst"), ("a_sequential", "one at a time")):
        if key in figures:
            f = figures[key]
            value = (
                f"p50 {f['p50_ms']:.1f} / p99 {f['p99_ms']:.1f} / max {f['max_ms']:.1f} ms"
                if "p50_ms" in f
                else "no answer arrived"
            )
            if f["errors"] or f["open_failures"]:
                value += f"; {f['open_failures']} failed to open, {f['errors']} FAILED"
            if f["errors"]:
                value += f" ({f['first_error'][:60]})"
            name = f"(a) POST->result, {f['n']} calls, {label} [{era}]"
            passed = not f["errors"] and not f["open_failures"] and f.get("p99_ms", 1e9) <= LATENCY_TARGET_MS
            yield name, value, f"p99 <= {LATENCY_TARGET_MS:.0f} ms, 0 failed", passed
    for rss_era in ERAS:
        if f"b_{rss_era}" in figures:
            f = figures[f"b_{rss_era}"]
            value = f"{f['kib_per_call']:.1f} KiB ({f['baseline_mib']} -> {f['loaded_mib']} MiB)"
            if f["open_failures"] or f["n"] != f["opened"] or f["release_errors"]:
                value += (
                    f"; failed: {f['open_failures']} to open, {f['opened'] - f['n']} while held,"
                    f" {f['release_errors']} on release"
                )
            name = f"(b) RSS per waiting call, {f['n']} calls [{rss_era}]"
            held = not f["open_failures"] and f["n"] == f["opened"]
            yield name, value, f"<= {RSS_TARGET_KIB:.0f} KiB", held and f["kib_per_call"] <= RSS_TARGET_KIB
    if "c" in figures:
        f = figures["c"]
        top = sorted(f["by_command"].items(), key=lambda kv: -abs(kv[1]))[:4]
        detail = ", ".join(f"{k} {v:.2f}" for k, v in top)
        value = f"{f['per_call_per_min']:.2f} ({detail})"
        name = f"(c) Redis cmds/call/min, {f['n']} calls, {f['window_s']:.0f} s [{era}]"
        yield name, value, f"<= {COMMANDS_TARGET:.0f}", f["per_call_per_min"] <= COMMANDS_TARGET


def report(figures: dict[str, Any], opts: Options, command: str) -> dict[str, Any]:
    table = list(rows(figures, opts.era))
    columns = [[name, value, target] for name, value, target, _ in table]
    headers = ("figure", "value", "target")
    widths = [max([len(h), *(len(c[i]) for c in columns)]) for i, h in enumerate(headers)]
    out()
    out(f"command: {command}")
    out(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    out(f"{'figure':<{widths[0]}}  {'value':<{widths[1]}}  {'target':<{widths[2]}}  result")
    for name, value, target, passed in table:
        verdict = "pass" if passed else "FAIL"
        out(f"{name:<{widths[0]}}  {value:<{widths[1]}}  {target:<{widths[2]}}  {verdict}")
    summary = {
        "command": command,
        "era": opts.era,
        "poll_interval_s": opts.poll_interval or 5.0,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "client_sse_errors_hidden": SSE_NOISE.hidden,
        "passed": {name: passed for name, _, _, passed in table},
        "figures": figures,
    }
    return summary


async def run(opts: Options, command: str) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    work_dir = Path(tempfile.mkdtemp(prefix="humangate-bench-"))
    try:
        with EmbeddedRedis(work_dir / "redis", persistent=False) as server:
            redis = Redis.from_url(server.url)
            try:
                if "a" in opts.parts or "c" in opts.parts:
                    figures |= await latency_and_commands(opts, server.url, redis, work_dir)
                if "b" in opts.parts:
                    for era in ERAS:
                        figures[f"b_{era}"] = await rss_per_call(opts, server.url, work_dir, era)
            finally:
                await redis.aclose()
    except BaseException:
        note(f"gateway and Redis logs kept in {work_dir}")
        raise
    shutil.rmtree(work_dir, ignore_errors=True)
    return report(figures, opts, command)


def parse_args(argv: Iterable[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200, help="waiting calls for (a) and (c)")
    parser.add_argument("--rss-calls", type=int, default=1000, help="waiting calls for (b), per era")
    parser.add_argument("--era", choices=ERAS, default="2026-07-28", help="MCP era of (a) and (c)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds of each Redis window (c)")
    parser.add_argument("--batch", type=int, default=50, help="calls opened at once while ramping up")
    parser.add_argument("--warmup", type=int, default=10, help="calls run end to end before measuring")
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=None,
        help="HUMANGATE_POLL_INTERVAL (default: the gateway's, 5 s)",
    )
    parser.add_argument("--parts", default="abc", help="which parts to run, e.g. 'ac' or 'b'")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON summary to this file")
    args = parser.parse_args(None if argv is None else list(argv))
    if args.calls < 1 or args.rss_calls < 1 or args.batch < 1 or args.window <= 0 or args.warmup < 0:
        parser.error("--calls, --rss-calls and --batch must be >= 1, --window > 0, --warmup >= 0")
    if not set(args.parts) <= set("abc") or not args.parts:
        parser.error("--parts takes letters from 'abc'")
    return Options(
        calls=args.calls,
        rss_calls=args.rss_calls,
        era=args.era,
        window=args.window,
        batch=args.batch,
        warmup=args.warmup,
        poll_interval=args.poll_interval,
        parts=args.parts,
        json_path=args.json,
    )


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through every finally: the children are stopped


def main() -> int:
    opts = parse_args()
    command = shlex.join(["python", *sys.argv])
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    logging.getLogger("mcp.client.streamable_http").addFilter(SSE_NOISE)
    try:
        summary = asyncio.run(run(opts, command))
    except BenchError as exc:
        note(f"benchmark failed: {exc}")
        return 2
    line = json.dumps(summary, separators=(",", ":"))
    if opts.json_path is not None:
        opts.json_path.write_text(json.dumps(summary, indent=2) + "\n")
    out(line)
    return 0 if all(summary["passed"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
