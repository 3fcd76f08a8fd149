"""Benchmark recovery from faults: for each fault, how long it lasted and the time from recovery to
every agent's result, on real processes. Run by hand from the repository root:

    python tests/bench/bench_faults.py                  # all nine scenarios, about 5 minutes
    python tests/bench/bench_faults.py --scenarios 1,5
    python tests/bench/bench_faults.py --scenarios 9 --drops 10

Scenarios (the same faults as tests/gateway/test_faults.py and tests/workers/test_worker_faults.py):
1. Redis restarted (AOF on) with 20 waiting calls; answers posted as soon as it is back.
2. Redis stopped for 15 s with 10 waiting calls (their progress must say the store is unreachable).
3. Redis frozen (SIGSTOP) for 10 s with 5 waiting calls, then thawed.
4. The gateway's path to Redis blackholed (half-open connections) for 20 s, then healed.
5. A Slack worker SIGKILLed mid-post (Slack has the message, the worker never got the reply), then a
   new worker started: the references recorded, exactly one message, then a click.
6. A worker behind a dead network path (blackholed, healed at once): request to Slack post.
7. A gateway stopped (SIGTERM) mid-wait, then started again on the same port and the call re-made.
8. 1,000 requests overdue at once (short timeout, created via REST): ended_at - deadline.
9. An agent's connection reset mid-wait (a TCP proxy drops every connection), the person answers,
   the agent calls again with the same arguments: the re-call to the kept answer, in each protocol
   era, ``--drops`` times each (tests/gateway/test_drop.py).

Gateways are ``python -m gateway.cli serve``, workers ``python -m gateway.cli worker --channels
slack``, each in its own process group, stopped on exit (also on errors and SIGTERM). Agents are the
official MCP client in the 2025-11-25 era, one session each (scenario 9: both eras); the fake Slack
runs in this process.
Progress goes to stderr; stdout gets a table, then the same figures as one JSON line. Exit status: 0
if no call failed and every check held, 1 otherwise, 2 if the benchmark could not measure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
import mcp_types as types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.embedded import EmbeddedRedis, free_port
from gateway.mcp.texts import RESTARTING_TEXT, STORE_UNREACHABLE_NOTE
from tests.bench.harness import (
    ANSWER,
    ROOT,
    RUN_ID,
    SCHEMA,
    BenchError,
    Gateway,
    gateway_env,
    kill_group,
    measure,
    note,
    out,
    percentile,
    print_header,
    spawn,
    spawn_gateway,
    wait_ready,
)
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import click, send
from tests.faults import TcpProxy, proxy_to, restartable_redis
from tests.mcp_client import ERAS, Era

ROOMY = {
    "HUMANGATE_RATE_LIMIT": "100000",
    "HUMANGATE_ANONYMOUS_RATE_LIMIT": "100000",
    "HUMANGATE_MAX_PENDING": "100000",
    "HUMANGATE_ANONYMOUS_MAX_PENDING": "100000",
    "HUMANGATE_MAX_SESSIONS": "100000",
    "HUMANGATE_ANONYMOUS_MAX_SESSIONS": "100000",
}
"""Keeps the per-caller limits out of the way: all agents here are one anonymous caller, each with
its own 2025-11-25 session (settings a gateway does not know are ignored)."""

POLL_INTERVAL = 1.0
"""HUMANGATE_POLL_INTERVAL of every gateway: progress (and so the "unreachable" note) every second."""

ACCEPTED = 'User provided: {"approved":true}'
START_TIMEOUT = 60.0
"""Seconds a gateway or a worker may take to start."""
STEP_TIMEOUT = 120.0
"""Seconds any one step (a call starting to wait, a result, a post) may take before the run fails."""
REPOSTS = 10
"""Times a form post refused with 503 ("submit again") is submitted again, 0.5 s apart."""
HF_ID = re.compile(r"Human Function ([^)\s]+)\)")
FORM_LINK = re.compile(r"(https?://[^\s;]+/f/[A-Za-z0-9._~-]+)")
DROP = ("HUMANGATE_", "SLACK_", "DISCORD_", "TEAMS_")

CHILDREN: list[subprocess.Popen[bytes]] = []
"""Every gateway and worker started: killed (process group) at exit if still running."""


def kill_children() -> None:
    for process in CHILDREN:
        kill_group(process)


@dataclass
class Options:
    scenarios: list[int]
    overdue: int
    overdue_timeout: int
    drops: int
    json_path: Path | None


@dataclass
class Row:
    """One line of the table: a figure of one scenario."""

    scenario: int
    fault: str
    lasted: float | None
    figure: str
    times: list[float] = field(default_factory=list)
    failed: int | None = None
    notes: str = ""


@dataclass
class Run:
    """What the scenarios share: the work directory, an embedded Redis, the rows and the problems."""

    work_dir: Path
    redis_url: str
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def redis_port(self) -> int:
        return int(self.redis_url.rsplit(":", 1)[1].split("/")[0])

    def row(self, row: Row) -> None:
        self.rows.append(row)
        note(f"({row.scenario}) {row.figure}: {spread(row.times) if row.times else ''} {row.notes}")

    def check(self, scenario: int, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(f"({scenario}) {problem}")
            note(f"({scenario}) PROBLEM: {problem}")


def spread(times: list[float]) -> str:
    if not times:
        return "n=0"
    return f"n={len(times)} p50 {percentile(times, 50):.3f} s max {max(times):.3f} s"


# --- processes ---------------------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(DROP)}


async def start_gateway(
    run: Run,
    stack: contextlib.AsyncExitStack,
    redis_url: str,
    name: str,
    *,
    port: int | None = None,
    data_dir: Path | None = None,
    worker: bool = True,
    env: dict[str, str] | None = None,
) -> Gateway:
    """``serve --worker`` (or ``--no-worker``) on a free or given port; stopped when ``stack`` closes."""
    port = port or free_port()
    log = run.work_dir / f"gateway-{name}.log"
    full_env = gateway_env(redis_url, port, data_dir or run.work_dir / f"data-{name}", POLL_INTERVAL)
    full_env |= ROOMY | (env or {})
    args = ["serve", "--port", str(port), "--worker" if worker else "--no-worker"]
    gateway = spawn_gateway([sys.executable, "-m", "gateway.cli", *args], port, ROOT, full_env, log)
    CHILDREN.append(gateway.process)
    stack.callback(gateway.stop)
    await wait_ready(gateway, name)
    return gateway


@dataclass
class Worker:
    """A ``humangate worker --channels slack`` child process in its own process group."""

    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL the whole process group, as an OOM killer would."""
        kill_group(self.process)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


async def start_worker(
    run: Run, stack: contextlib.AsyncExitStack, redis_url: str, name: str, slack: FakeSlack
) -> Worker:
    """A Slack worker, once it says it listens on its queues; killed when ``stack`` closes."""
    log = run.work_dir / f"worker-{name}.log"
    env = clean_env() | {"HUMANGATE_REDIS_URL": redis_url} | slack.env()
    process = spawn([sys.executable, "-m", "gateway.cli", "worker", "--channels", "slack"], ROOT, log, env)
    CHILDREN.append(process)
    worker = Worker(process, log)
    stack.callback(worker.kill)
    deadline = time.monotonic() + START_TIMEOUT
    while "on queues" not in worker.output():
        if process.poll() is not None or time.monotonic() > deadline:
            raise BenchError(f"worker {name} did not start:\n{worker.output()[-3000:]}")
        await asyncio.sleep(0.05)  # readiness polling of a child process, bounded
    return worker


# --- agents ------------------------------------------------------------------------------------


@dataclass(eq=False)
class Agent:
    """One agent's ``elicit`` call (its own 2025-11-25 session): every progress message with the
    time it arrived, and the time its result arrived."""

    arguments: dict[str, Any]
    era: Era = "legacy"
    progress: list[tuple[float, str]] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[types.CallToolResult] | None = None
    finished_at: float = 0.0

    def start(self, base_url: str) -> Agent:
        self.task = asyncio.create_task(self._call(base_url))
        return self

    async def _call(self, base_url: str) -> types.CallToolResult:
        async with (
            create_mcp_http_client() as http,
            Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=self.era) as client,
        ):
            try:
                return await client.call_tool("elicit", self.arguments, progress_callback=self._on_progress)
            finally:
                self.finished_at = time.monotonic()

    async def _on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        async with self.changed:
            self.progress.append((time.monotonic(), message or ""))
            self.changed.notify_all()

    def _find(self, wanted: Callable[[str], bool], since: float) -> tuple[float, str] | None:
        return next(((t, m) for t, m in self.progress if t >= since and wanted(m)), None)

    async def first(
        self, wanted: Callable[[str], bool], since: float = 0.0, timeout: float = STEP_TIMEOUT
    ) -> tuple[float, str] | None:
        """The first progress (time, message) at or after ``since`` that ``wanted`` accepts, or
        None if none came within ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with self.changed:
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self._find(wanted, since) is not None), timeout
                )
        return self._find(wanted, since)

    async def waiting(self) -> tuple[float, str]:
        """(when, the HF id) once the first progress says the request waits."""
        found = await self.first(lambda m: HF_ID.search(m) is not None)
        if found is None:
            raise BenchError(f"a call never started waiting: {self.arguments['message']}")
        match = HF_ID.search(found[1])
        assert match is not None
        return found[0], match.group(1)

    async def form_url(self) -> str:
        found = await self.first(lambda m: FORM_LINK.search(m) is not None)
        match = FORM_LINK.search(found[1]) if found else None
        if match is None:
            raise BenchError(f"a call never got its form link: {self.arguments['message']}")
        return match.group(1)

    async def result(self, timeout: float = STEP_TIMEOUT) -> types.CallToolResult | str:
        """The tool result, or what went wrong."""
        assert self.task is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self.task), timeout)
        except TimeoutError:
            return f"no result within {timeout:.0f} s"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"


def text(result: types.CallToolResult | str) -> str:
    if isinstance(result, str):
        return result
    content = result.content[0] if result.content else None
    return content.text if isinstance(content, types.TextContent) else repr(result)


def web_arguments(label: str) -> dict[str, Any]:
    return {"message": f"bench-faults {RUN_ID} {label}", "schema": SCHEMA, "uiType": "web"}


async def waiting_agents(gateway: Gateway, count: int, label: str) -> tuple[list[Agent], list[str]]:
    """``count`` web calls waiting, each on its own request: (the agents, their form links)."""
    agents = [Agent(web_arguments(f"{label} #{i}")).start(gateway.url) for i in range(count)]
    urls = await asyncio.gather(*(agent.form_url() for agent in agents))
    return agents, list(urls)


async def told_unreachable(agents: list[Agent], since: float, timeout: float) -> list[float | None]:
    """Seconds from ``since`` to each agent's first progress saying the store is unreachable."""
    found = await asyncio.gather(
        *(agent.first(lambda m: STORE_UNREACHABLE_NOTE in m, since, timeout) for agent in agents)
    )
    return [None if f is None else f[0] - since for f in found]


async def post_answer(http: httpx.AsyncClient, url: str) -> tuple[int, str | None, float]:
    """Post the form as a browser does; a 503 ("not saved yet, submit again") is submitted again.
    (how many re-posts, what went wrong, when the last response came)."""
    for attempt in range(REPOSTS + 1):
        try:
            response = await http.post(url, data=ANSWER, follow_redirects=False)
        except httpx.HTTPError as exc:
            return attempt, f"form post failed: {exc!r}", time.monotonic()
        if response.status_code == 303:
            return attempt, None, time.monotonic()
        if response.status_code != 503:
            return attempt, f"form post got {response.status_code}", time.monotonic()
        await asyncio.sleep(0.5)  # the person submitting again, as the page asks; bounded by REPOSTS
    return REPOSTS, f"form post refused {REPOSTS + 1} times", time.monotonic()


@dataclass
class Answers:
    times: list[float]
    """Seconds from recovery to each agent's result."""
    failures: list[str]
    reposts: int
    saved: list[float]
    """Seconds from recovery to each form post's 303 (the answer saved)."""

    def notes(self) -> str:
        text = f"answers saved (303) by {max(self.saved):.3f} s" if self.saved else "no answer saved"
        text += f"; re-posts after 503: {self.reposts}"
        return text + (f"; first failure: {self.failures[0]}" if self.failures else "")


async def answer_all(agents: list[Agent], urls: list[str], since: float) -> Answers:
    """Answer every form now, all at once; figures from ``since`` (the recovery)."""
    async with httpx.AsyncClient(timeout=STEP_TIMEOUT) as http:
        posted = await asyncio.gather(*(post_answer(http, url) for url in urls))
    failures = [problem for _, problem, _ in posted if problem]
    times = []
    for agent, (_, problem, _) in zip(agents, posted, strict=True):
        if problem:
            continue
        result = await agent.result()
        if text(result) != ACCEPTED:
            failures.append(f"result: {text(result)[:160]}")
        else:
            times.append(agent.finished_at - since)
    saved = [at - since for _, problem, at in posted if not problem]
    return Answers(times, failures, sum(n for n, _, _ in posted), saved)


async def stored_requests(redis_url: str) -> int:
    async with Redis.from_url(redis_url) as redis:
        return len([key async for key in redis.scan_iter(match=keys.human_function("*"))])


async def last_the_fault(started: float, seconds: float) -> None:
    """Let a fault last its stated time (the one sleep here that is not a poll)."""
    remaining = started + seconds - time.monotonic()
    if remaining > 0:
        await asyncio.sleep(remaining)  # the fault's duration, by design


def fmt_noticed(noticed: list[float | None]) -> tuple[list[float], str]:
    told = [t for t in noticed if t is not None]
    return told, f"{len(told)}/{len(noticed)} calls told"


# --- scenarios ---------------------------------------------------------------------------------


async def redis_fault(run: Run, scenario: int) -> None:
    """1, 2, 3: Redis restarted, stopped or frozen under waiting calls, answers right after."""
    count, seconds, what = {
        1: (20, 0.0, "Redis restarted (AOF on)"),
        2: (10, 15.0, "Redis stopped"),
        3: (5, 10.0, "Redis frozen (SIGSTOP)"),
    }[scenario]
    fault = f"{what}, {count} waiting calls"
    with restartable_redis(run.work_dir / f"redis-{scenario}") as redis:
        async with contextlib.AsyncExitStack() as stack:
            gateway = await start_gateway(run, stack, redis.url, f"s{scenario}")
            agents, urls = await waiting_agents(gateway, count, f"s{scenario}")
            note(f"({scenario}) {count} calls waiting; {what.lower()}")
            started = time.monotonic()
            if scenario == 1:
                await asyncio.to_thread(redis.restart)  # about 0.1 s down: every pooled connection stale
            else:
                await asyncio.to_thread(redis.stop if scenario == 2 else redis.freeze)
                noticed = await told_unreachable(agents, started, seconds)
                told, told_text = fmt_noticed(noticed)
                run.row(
                    Row(scenario, fault, None, "fault to 'store unreachable' progress", told, None, told_text)
                )
                run.check(scenario, len(told) == count, f"only {told_text} the store is unreachable")
                await last_the_fault(started, seconds)
                await asyncio.to_thread(redis.start if scenario == 2 else redis.thaw)
            recovered = time.monotonic()
            answers = await answer_all(agents, urls, recovered)
            stored = await stored_requests(redis.url)
            notes = f"{answers.notes()}; requests stored {stored}/{count}"
            label = "Redis back to result" if scenario != 3 else "thaw to result"
            failed = len(answers.failures)
            run.row(Row(scenario, fault, recovered - started, label, answers.times, failed, notes))
            run.check(scenario, not failed, f"{failed} call(s) failed")
            run.check(scenario, stored == count, f"{stored} requests stored for {count} calls")


async def blackholed_gateway(run: Run, seconds: float = 20.0, count: int = 5) -> None:
    """4: the gateway's path to Redis blackholed for ``seconds``, then healed."""
    fault = f"gateway-Redis path blackholed, {count} waiting calls"
    with proxy_to(run.redis_port) as proxy:
        async with contextlib.AsyncExitStack() as stack:
            gateway = await start_gateway(run, stack, proxy.url, "s4")
            agents, urls = await waiting_agents(gateway, count, "s4")
            note(f"(4) {count} calls waiting; blackholing for {seconds:.0f} s")
            proxy.blackhole()  # packets silently dropped: every open connection is now half-open
            cut = time.monotonic()
            noticed = await told_unreachable(agents, cut, seconds)
            told, told_text = fmt_noticed(noticed)
            run.row(Row(4, fault, None, "blackhole to 'store unreachable' progress", told, None, told_text))
            run.check(4, len(told) == count, f"only {told_text} the store is unreachable")
            await last_the_fault(cut, seconds)
            proxy.heal()  # new connections pass; the old ones stay dead
            healed = time.monotonic()
            answers = await answer_all(agents, urls, healed)
            failed = len(answers.failures)
            run.row(Row(4, fault, healed - cut, "heal to result", answers.times, failed, answers.notes()))
            run.check(4, not failed, f"{failed} call(s) failed")


async def refs_recorded(redis_url: str, hf_id: str, timeout: float) -> float | None:
    """The time the worker wrote the request's message references, or None."""
    deadline = time.monotonic() + timeout
    async with Redis.from_url(redis_url) as redis:
        while time.monotonic() < deadline:
            if await redis.hget(keys.human_function(hf_id), "refs"):
                return time.monotonic()
            await asyncio.sleep(0.05)  # polling Redis for the worker's write, bounded
    return None


async def killed_worker(run: Run) -> None:
    """5: a Slack worker SIGKILLed mid-post, then a new one started; then a click answers."""
    fault = "Slack worker SIGKILLed mid-post"
    with FakeSlack().running() as slack:
        async with contextlib.AsyncExitStack() as stack:
            gateway = await start_gateway(run, stack, run.redis_url, "s5", worker=False, env=slack.env())
            first = await start_worker(run, stack, run.redis_url, "s5-first", slack)
            release = slack.server.stall("POST", "/api/chat.postMessage")
            agent = Agent({**web_arguments("s5"), "uiType": "slack"}).start(gateway.url)
            _, hf_id = await agent.waiting()
            (message,) = await slack.posted()  # Slack has the post; its reply never reaches the worker
            first.kill()
            killed = time.monotonic()
            release.set()
            note("(5) worker killed mid-post; starting a new one")
            started = time.monotonic()
            await start_worker(run, stack, run.redis_url, "s5-second", slack)
            ready = time.monotonic()
            refs_at = await refs_recorded(run.redis_url, hf_id, STEP_TIMEOUT)
            stored, posts = len(slack.stored()), len(slack.post_calls())
            notes = (
                f"new worker started {started - killed:.2f} s after the kill, ready after"
                f" {ready - started:.2f} s; messages in Slack {stored}, chat.postMessage calls {posts}"
            )
            times = [refs_at - started] if refs_at else []
            run.row(Row(5, fault, None, "new worker start to refs recorded", times, None, notes))
            run.check(5, refs_at is not None, "the message references were never recorded")
            run.check(5, stored == 1 and posts == 1, f"{stored} message(s) stored, {posts} post(s)")
            clicked = time.monotonic()
            response = await send(gateway.url, click(message, "hg:approve", "U1", slack.url))
            result = await agent.result()
            ok = response.status_code == 200 and text(result) == ACCEPTED
            notes = f"click answered {response.status_code}" + (
                "" if ok else f"; result: {text(result)[:160]}"
            )
            run.row(
                Row(
                    5,
                    fault,
                    None,
                    "click to result",
                    [agent.finished_at - clicked] if ok else [],
                    int(not ok),
                    notes,
                )
            )
            run.check(5, ok, "the click did not reach the agent")


async def dead_path_worker(run: Run) -> None:
    """6: a worker whose connections to Redis are half-open; time from the request to the post."""
    fault = "worker behind a dead network path"
    with FakeSlack().running() as slack, proxy_to(run.redis_port) as proxy:
        async with contextlib.AsyncExitStack() as stack:
            gateway = await start_gateway(run, stack, run.redis_url, "s6", worker=False, env=slack.env())
            await start_worker(run, stack, proxy.url, "s6", slack)
            proxy.blackhole()  # the worker's connections are now half-open for good
            proxy.heal()  # new connections would work, if the worker noticed
            called = time.monotonic()
            agent = Agent({**web_arguments("s6"), "uiType": "slack"}).start(gateway.url)
            _, hf_id = await agent.waiting()
            async with httpx.AsyncClient(timeout=30) as http:
                view = (await http.get(f"{gateway.url}/v1/requests/{hf_id}")).json()
            created_at = float(view["created_at"])  # the gateway's wall clock, as time.time() here
            try:
                await slack.server.wait_for(lambda _: slack.stored() or None, STEP_TIMEOUT)
                posted_at, posted = time.time(), time.monotonic()
                times = [posted_at - created_at]
                notes = f"elicit call to post {posted - called:.3f} s"
            except AssertionError:
                times, notes = [], f"no post within {STEP_TIMEOUT:.0f} s"
            stored = len(slack.stored())
            notes += f"; messages in Slack {stored}"
            run.row(Row(6, fault, 0.0, "request created to Slack post", times, None, notes))
            run.check(6, stored == 1, f"{stored} message(s) posted")
            assert agent.task is not None
            agent.task.cancel()
            await asyncio.gather(agent.task, return_exceptions=True)


async def stopped_gateway(run: Run) -> None:
    """7: a gateway stopped mid-wait; started again on the same port and the call re-made."""
    fault = "gateway stopped (SIGTERM) mid-wait"
    port, data_dir = free_port(), run.work_dir / "data-s7"
    arguments = web_arguments("s7")
    async with contextlib.AsyncExitStack() as stack:
        gateway = await start_gateway(run, stack, run.redis_url, "s7-first", port=port, data_dir=data_dir)
        agent = Agent(arguments).start(gateway.url)
        url = await agent.form_url()
        hf_id = url.rsplit("/", 1)[1].split(".")[0]
        stopped = time.monotonic()
        await asyncio.to_thread(gateway.stop)
        exited = time.monotonic()
        result = await agent.result()
        expected = RESTARTING_TEXT.format(id=hf_id, tool="elicit")
        ok = isinstance(result, types.CallToolResult) and result.is_error and text(result) == expected
        status = gateway.process.returncode
        notes = f"exit status {status} after {exited - stopped:.2f} s; result: {text(result)!r}"
        times = [agent.finished_at - stopped] if agent.finished_at else []
        run.row(Row(7, fault, None, "SIGTERM to the call's result", times, int(not ok), notes))
        run.check(7, ok, f"the stopped call's result was not the restarting text: {text(result)[:160]}")
        run.check(7, gateway.process.returncode == 0, f"exit status {gateway.process.returncode}")
    async with contextlib.AsyncExitStack() as stack:
        restarted = time.monotonic()
        again = await start_gateway(run, stack, run.redis_url, "s7-second", port=port, data_dir=data_dir)
        healthy = time.monotonic()
        second = Agent(arguments).start(again.url)
        same = await second.form_url()
        attached = second.progress[0][0]
        run.check(7, same == url, "the re-made call opened a new request instead of re-attaching")
        posted = time.monotonic()
        answers = await answer_all([second], [same], restarted)
        notes = (
            f"healthy after {healthy - restarted:.2f} s, re-attached after {attached - restarted:.2f} s,"
            f" form post to result {second.finished_at - posted:.3f} s; {answers.notes()}"
        )
        failed = len(answers.failures)
        run.row(
            Row(7, fault, restarted - stopped, "restart to re-attached answer", answers.times, failed, notes)
        )
        run.check(7, not failed, "the re-attached call failed")


async def overdue(run: Run, count: int, timeout: int) -> None:
    """8: ``count`` requests created via REST with a short timeout, all overdue at about once."""
    fault = f"{count} requests overdue at once (timeout {timeout} s)"
    async with contextlib.AsyncExitStack() as stack:
        gateway = await start_gateway(
            run, stack, run.redis_url, "s8", env={"HUMANGATE_ANONYMOUS_TIMEOUT": str(timeout)}
        )
        limits = httpx.Limits(max_connections=20)
        started = time.monotonic()
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:

            async def create(i: int) -> str | None:
                body = {"message": f"bench-faults {RUN_ID} overdue {i}", "schema": SCHEMA, "uiType": "web"}
                response = await http.post(f"{gateway.url}/v1/requests", json=body)
                return str(response.json()["id"]) if response.status_code == 201 else None

            created = await asyncio.gather(*(create(i) for i in range(count)))
        span = time.monotonic() - started
        ids = [hf_id for hf_id in created if hf_id]
        note(f"(8) {len(ids)} requests created in {span:.2f} s; waiting for the reaper")
        deadline = time.monotonic() + timeout + STEP_TIMEOUT
        async with Redis.from_url(run.redis_url) as redis:
            while await redis.zcard(keys.PENDING):
                if time.monotonic() > deadline:
                    raise BenchError("(8) overdue requests were still pending long after their deadline")
                await asyncio.sleep(0.2)  # polling Redis until the reaper is done, bounded
            lateness, statuses = [], []
            for hf_id in ids:
                deadline_, ended_at, status = await redis.hmget(
                    keys.human_function(hf_id), ["deadline", "ended_at", "status"]
                )
                statuses.append(status)
                if status == b"expired":
                    lateness.append(float(ended_at or 0) - float(deadline_ or 0))
        failed = (count - len(ids)) + sum(status != b"expired" for status in statuses)
        # Deadlines are spread over the creation span: "at once" only when creating is fast.
        notes = f"created over {span:.2f} s, so due over that span; expired {len(lateness)}/{count}"
        run.row(Row(8, fault, None, "lateness, ended_at - deadline", lateness, failed, notes))
        run.check(8, failed == 0, f"{failed} request(s) not created or not expired")


async def drop_then_call_again(proxy: TcpProxy, http: httpx.AsyncClient, era: Era, label: str) -> float | str:
    """One call through ``proxy``, reset mid-wait, answered, then made again: the seconds from the
    second call's start to its result, or what went wrong."""
    via_proxy = f"http://127.0.0.1:{proxy.port}"
    arguments = web_arguments(label)
    agent = Agent(arguments, era).start(via_proxy)
    url = await agent.form_url()
    proxy.refuse()  # every connection reset both ways, new ones refused
    gave_up = await agent.result()
    proxy.heal()
    if isinstance(gave_up, types.CallToolResult):
        return f"the dropped call got a result: {text(gave_up)[:120]}"
    _, problem, _ = await post_answer(http, url)
    if problem:
        return problem
    again = Agent(arguments, era)
    started = time.monotonic()
    result = await again.start(via_proxy).result()
    if again.progress:
        return f"the re-call asked again: {again.progress[0][1][:120]}"
    if text(result) != ACCEPTED:
        return f"re-call: {text(result)[:120]}"
    return again.finished_at - started


async def dropped_agents(run: Run, drops: int) -> None:
    """9: an agent's connection reset mid-wait, the answer given, the same call made again."""
    async with contextlib.AsyncExitStack() as stack:
        gateway = await start_gateway(run, stack, run.redis_url, "s9")
        with proxy_to(int(gateway.url.rsplit(":", 1)[1])) as proxy:
            async with httpx.AsyncClient(timeout=STEP_TIMEOUT) as http:
                for era in ERAS:
                    before = await stored_requests(run.redis_url)
                    outcomes = [
                        await drop_then_call_again(proxy, http, era, f"s9 {era} #{i}") for i in range(drops)
                    ]
                    opened = await stored_requests(run.redis_url) - before
                    times = [o for o in outcomes if isinstance(o, float)]
                    failures = [o for o in outcomes if isinstance(o, str)]
                    notes = f"requests opened {opened} for {drops} calls"
                    notes += f"; first failure: {failures[0]}" if failures else ""
                    fault = f"agent's connection reset mid-wait ({era})"
                    run.row(Row(9, fault, None, "re-call to the kept answer", times, len(failures), notes))
                    run.check(9, not failures, f"{era}: {len(failures)} re-call(s) without the kept answer")
                    run.check(9, opened == drops, f"{era}: {opened} requests opened for {drops} calls")


async def run_all(opts: Options) -> Run:
    work_dir = Path(tempfile.mkdtemp(prefix="humangate-bench-faults-"))
    try:
        with EmbeddedRedis(work_dir / "redis", persistent=False) as server:
            run = Run(work_dir, server.url)
            for scenario in opts.scenarios:
                note(f"scenario {scenario}")
                if scenario in (1, 2, 3):
                    await redis_fault(run, scenario)
                elif scenario == 4:
                    await blackholed_gateway(run)
                elif scenario == 5:
                    await killed_worker(run)
                elif scenario == 6:
                    await dead_path_worker(run)
                elif scenario == 7:
                    await stopped_gateway(run)
                elif scenario == 8:
                    await overdue(run, opts.overdue, opts.overdue_timeout)
                elif scenario == 9:
                    await dropped_agents(run, opts.drops)
                async with Redis.from_url(server.url) as redis:
                    await redis.flushdb()
    except BaseException:
        note(f"gateway, worker and Redis logs kept in {work_dir}")
        raise
    shutil.rmtree(work_dir, ignore_errors=True)
    return run


# --- report ------------------------------------------------------------------------------------


def table(rows: list[Row]) -> list[list[str]]:
    lines = [["#", "fault", "lasted", "measured", "n", "p50", "max", "failed", "notes"]]
    for row in rows:
        times = row.times
        lines.append(
            [
                str(row.scenario),
                row.fault,
                "" if row.lasted is None else f"{row.lasted:.2f} s",
                row.figure,
                str(len(times)),
                f"{percentile(times, 50):.3f} s" if times else "-",
                f"{max(times):.3f} s" if times else "-",
                "" if row.failed is None else str(row.failed),
                row.notes,
            ]
        )
    return lines


def parse_args() -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", default="1,2,3,4,5,6,7,8,9", help="comma-separated, of 1..9")
    parser.add_argument("--overdue", type=int, default=1000, help="(8) requests overdue at once")
    parser.add_argument("--overdue-timeout", type=int, default=6, help="(8) their timeout, seconds")
    parser.add_argument("--drops", type=int, default=5, help="(9) dropped calls per protocol era")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args()
    scenarios = [int(s) for s in args.scenarios.split(",") if s.strip()]
    if not scenarios or any(s not in range(1, 10) for s in scenarios):
        parser.error("--scenarios takes numbers from 1 to 9")
    if args.drops < 1:
        parser.error("--drops: must be at least 1")
    return Options(scenarios, args.overdue, args.overdue_timeout, args.drops, args.json)


def main() -> int:
    opts = parse_args()
    command = shlex.join(["python", *sys.argv])
    try:
        result = measure(run_all(opts))
    finally:
        kill_children()
    if result is None:
        return 2
    lines = table(result.rows)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    print_header(command)
    for line in lines:
        out(
            "  ".join(f"{cell:<{width}}" for cell, width in zip(line, widths, strict=False)) + "  " + line[-1]
        )
    out(f"problems: {len(result.problems)}" + "".join(f"\n  {p}" for p in result.problems))
    summary = {
        "command": command,
        "load_average": os.getloadavg(),
        "rows": [
            {
                "scenario": r.scenario,
                "fault": r.fault,
                "lasted_s": None if r.lasted is None else round(r.lasted, 3),
                "measured": r.figure,
                "n": len(r.times),
                "p50_s": round(percentile(r.times, 50), 4) if r.times else None,
                "max_s": round(max(r.times), 4) if r.times else None,
                "failed": r.failed,
                "notes": r.notes,
            }
            for r in result.rows
        ],
        "problems": result.problems,
    }
    if opts.json_path is not None:
        opts.json_path.write_text(json.dumps(summary, indent=2) + "\n")
    out(json.dumps(summary, separators=(",", ":")))
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
