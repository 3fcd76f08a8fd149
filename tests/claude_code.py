"""The real Claude Code CLI (``claude``, from ``tests/js``: ``npm ci --prefix tests/js``) run as a
developer runs it with humangate as its permission prompt tool (docs/permissions.md), offline: its
model is ``tests.fakes.anthropic.FakeAnthropic``, its home and working directory are the test's.

And the person who answers it: an operator signed in to the gateway's inbox, who learns of each
request from the inbox's live feed and answers it there, as a person at the inbox page would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.gateway.flows import WAIT
from tests.gateway.inbox.operators import csrf_of, signed_in

CLAUDE = Path(__file__).resolve().parent / "js" / "node_modules" / ".bin" / "claude"
"""The CLI exactly as tests/js/package-lock.json pins it (its native binary, linked by its postinstall)."""
PROMPT_TOOL = "mcp__humangate__approval_prompt"
RUN_TIMEOUT = 90.0
"""Seconds one CLI run may take before the test fails (it starts in a few seconds here)."""


@dataclass(frozen=True)
class ClaudeRun:
    """One finished ``claude -p`` run."""

    returncode: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The ``--output-format json`` result object."""
        assert self.returncode == 0, f"claude exited {self.returncode}:\n{self.stdout}\n{self.stderr}"
        parsed: dict[str, Any] = json.loads(self.stdout)
        return parsed


def claude_env(home: Path, api_url: str, **extra: str) -> dict[str, str]:
    """The CLI's whole environment: offline, no updater, a home of its own, no key of the shell's."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **extra,
    }


def mcp_config(path: Path, gateway_url: str, **options: Any) -> Path:
    """The ``--mcp-config`` file naming the gateway as the ``humangate`` server, with ``options``
    (``headers``, ``timeout``) in its entry."""
    server: dict[str, Any] = {"type": "http", "url": f"{gateway_url}/mcp", **options}
    path.write_text(json.dumps({"mcpServers": {"humangate": server}}))
    return path


async def run_claude(
    tmp_path: Path,
    gateway_url: str,
    api_url: str,
    prompt: str = "Push the fix",
    *,
    api_key: str | None = None,
    server_timeout: int | None = None,
    timeout: float = RUN_TIMEOUT,
    **env: str,
) -> ClaudeRun:
    """``claude -p PROMPT --permission-prompt-tool mcp__humangate__approval_prompt`` in a working
    directory of its own, calling the gateway with ``api_key`` (anonymous without one) and the
    server entry's ``timeout`` (ms) when ``server_timeout`` is given; ``env`` adds to its
    environment (``MCP_TOOL_TIMEOUT``...)."""
    assert CLAUDE.exists(), f"no {CLAUDE}: run `npm ci --prefix tests/js` (scripts/test does)"
    home, work = tmp_path / "claude-home", tmp_path / "claude-work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    options: dict[str, Any] = {}
    if api_key:
        options["headers"] = {"Authorization": f"Bearer {api_key}"}
    if server_timeout is not None:
        options["timeout"] = server_timeout
    config = mcp_config(tmp_path / "mcp.json", gateway_url, **options)
    command = [str(CLAUDE), "-p", prompt, "--mcp-config", str(config)]
    command += ["--permission-prompt-tool", PROMPT_TOOL, "--output-format", "json"]
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=work,
        env=claude_env(home, api_url, **env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    finally:
        if process.returncode is None:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    assert process.returncode is not None
    return ClaudeRun(process.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace"))


@dataclass
class Person:
    """An operator in the inbox: ``requests`` are the pending requests the live feed showed, as it
    showed them, in the order they appeared (each id once)."""

    client: httpx.AsyncClient
    requests: list[dict[str, Any]] = field(default_factory=list)
    _appeared: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def _watch(self, stream: httpx.Response) -> None:
        name = ""
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                shown = data["requests"] if name == "snapshot" else [data] if name == "added" else []
                async with self._appeared:
                    known = {r["id"] for r in self.requests}
                    self.requests += [r for r in shown if r["id"] not in known]
                    self._appeared.notify_all()

    async def wait_for_request(self, number: int = 1, timeout: float = WAIT) -> str:
        """The id of the ``number``-th request that appeared in the inbox, once it has."""
        async with self._appeared:
            await asyncio.wait_for(self._appeared.wait_for(lambda: len(self.requests) >= number), timeout)
        return str(self.requests[number - 1]["id"])

    async def page(self, hf_id: str) -> str:
        """The request's page in the inbox (opening it, as the person does before answering)."""
        response = await self.client.get(f"/inbox/{hf_id}")
        assert response.status_code == 200, response.text
        return response.text

    async def answer(self, hf_id: str, fields: Mapping[str, str]) -> None:
        """Post the request's form in the inbox, as its Submit or Decline button does."""
        shown = await self.page(hf_id)
        response = await self.client.post(f"/inbox/{hf_id}", data={**fields, "hg-csrf": csrf_of(shown)})
        assert response.status_code == 303, response.text


@asynccontextmanager
async def person_in_inbox(gateway_url: str, key: str) -> AsyncIterator[Person]:
    """A person signed in to the inbox with the operator ``key``, watching its live feed."""
    async with (
        signed_in(gateway_url, key) as client,
        client.stream("GET", "/inbox/events", timeout=httpx.Timeout(WAIT, read=None)) as stream,
    ):
        person = Person(client)
        watcher = asyncio.create_task(person._watch(stream))
        try:
            yield person
        finally:
            watcher.cancel()
            with suppress(asyncio.CancelledError):
                await watcher
