"""Every shell session shown in the docs (README.md, docs/*.md) whose command runs offline is run by
this test, as a real process against a real Redis, and its output compared with the page: a change
of a command's output fails here until the page shows it.

The convention (docs/contract.md#console-examples):

- A session is a ```console block: lines starting with ``$ `` are commands (``NAME=value`` words
  before one set its environment), the lines below each are what it prints (stdout and stderr, as
  a terminal shows them). ``$ humangate ...`` commands
  are run (``python -m gateway.cli``), except ``serve`` and ``worker`` shown
  without output (they do not end; shown with output, they refuse to start, and are run).
- ``$ cat FILE`` shows a file: the lines below it are written as ``FILE`` before anything runs.
  Otherwise the session's directory holds ``humangate.toml``: the page's last ```toml block above it.
- Words after ``console`` in the fence name what the session needs first, made through the real
  store (``SETUPS``): ``slack`` (Slack configured, the fake one, with the page's channel ids),
  ``request`` (an ended request in the audit trail), ``failed-webhook`` (a failed delivery).
- In the output, ``<id>``, ``<time>``, ``<key>``, ``<fingerprint>`` and ``<version>`` stand for
  what differs at each run, ``...`` on a line of its own for any lines, ``...`` inside a line for
  any text. The Redis the session uses is shown as ``redis://localhost:6379/0``.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from redis.asyncio import Redis

from gateway.core.audit import DEFAULT_AUDIT
from gateway.core.store import HumanFunctionStore
from gateway.core.webhook_store import State, WebhookStore
from schemas.models import Action, HumanFunction, Outcome, Person, Status
from schemas.settings import Settings
from tests.conftest import _clean_env
from tests.fakes.slack import FakeSlack

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

SHOWN_REDIS = "redis://localhost:6379/0"
"""How the docs show the Redis a command uses (the test's own URL is put in its place)."""

NOT_RUN = ("serve", "worker")
"""Commands a session may show without output, not run: they serve until stopped. Shown with output
they refuse to start, and are run and compared like the rest."""

OFFLINE = (
    "policy check",
    "keys create",
    "keys list",
    "keys revoke",
    "doctor",
    "audit export",
    "webhooks failed",
)
"""Commands the docs show at least once in a session (each is run, so each cannot drift)."""

PLACEHOLDERS = {
    "<id>": r"[\w.:-]+",
    "<time>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)",
    "<key>": r"[\w-]{20,}",
    "<fingerprint>": r"[0-9a-f]{12}",
    "<version>": r"\d+(?:\.\d+)*",
}
"""What each placeholder of a session's output stands for."""


@dataclass
class Command:
    words: list[str]
    shown: list[str] = field(default_factory=list)
    """The lines the page shows below the command."""


@dataclass
class Session:
    page: Path
    line: int
    needs: list[str]
    commands: list[Command]
    files: dict[str, str]

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


FENCE = re.compile(r"^( *)```(\w*)(.*)$")


def sessions(page: Path) -> Iterator[Session]:
    """The ```console blocks of ``page``, with the policy file each runs beside."""
    lines = page.read_text(encoding="utf-8").splitlines()
    policy: str | None = None
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        index += 1
        if not opened:
            continue
        indent, language, rest = opened.groups()
        body: list[str] = []
        while not lines[index].strip().startswith("```"):
            body.append(lines[index].removeprefix(indent))
            index += 1
        index += 1
        if language == "toml":
            policy = "\n".join(body) + "\n"
        elif language == "console":
            yield parse_session(page, index - len(body) - 1, rest.split(), body, policy)


def parse_session(page: Path, line: int, needs: list[str], body: list[str], policy: str | None) -> Session:
    commands: list[Command] = []
    for text in body:
        if text.startswith("$ "):
            commands.append(Command(text[2:].split()))
        else:
            assert commands, f"{page.name}:{line}: output before any command"
            commands[-1].shown.append(text)
    files = {"humangate.toml": policy} if policy is not None else {}
    for command in commands:
        if command.words[0] == "cat":
            files[command.words[1]] = "\n".join(command.shown) + "\n"
    return Session(page, line, needs, [c for c in commands if c.words[0] != "cat"], files)


ALL = [session for page in PAGES for session in sessions(page)]


def pattern(shown: list[str]) -> re.Pattern[str]:
    """The output ``shown`` stands for, as one regular expression over the whole output."""
    parts: list[str] = []
    for line in shown:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        piece = re.escape(line)
        for placeholder, meaning in PLACEHOLDERS.items():
            piece = piece.replace(re.escape(placeholder), meaning)
        piece = piece.replace(re.escape("..."), r"[^\n]*?")
        piece = re.sub(r"(?:\\ |\\\t)+", r"[ \\t]+", piece)  # a run of spaces shows a tab too
        parts.append(piece + r"\n")
    return re.compile("".join(parts))


def run(words: list[str], cwd: Path, env: dict[str, str], redis_url: str) -> str:
    """``humangate WORDS`` as a person runs it in ``cwd``: what a terminal shows, in order."""
    ran = subprocess.run(
        [sys.executable, "-m", "gateway.cli", *words[1:]],
        cwd=cwd,
        env=_clean_env()
        | {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), "HUMANGATE_REDIS_URL": redis_url}
        | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )
    return ran.stdout.replace(redis_url, SHOWN_REDIS)


# What a session may need first, made through the real store (``Setup``: Redis URL, the session).

Setup = Callable[[str, Session, ExitStack], dict[str, str]]
"""(the Redis URL, the session, where to leave what must stop after it) -> the environment it needs."""

NOW = time.time()


def with_slack(redis_url: str, session: Session, stack: ExitStack) -> dict[str, str]:
    """Slack configured: the fake Slack, with every channel id the session's policy file names."""
    slack = FakeSlack()
    for channel in re.findall(r'"(C[0-9A-Z]{6,})"', "".join(session.files.values())):
        slack.channels[channel] = {"name": channel.lower(), "is_member": True, "is_private": False}
    return stack.enter_context(slack.running()).env()


async def _ended_request(redis_url: str) -> None:
    async with Redis.from_url(redis_url) as redis:
        store = HumanFunctionStore(redis, audit=DEFAULT_AUDIT)
        hf = HumanFunction(
            id="4f2a9c1e0b7d4e6f8a1b2c3d4e5f6a7b",
            requester="deploy-bot",
            owner="key:deploy-bot",
            channel="web",
            message="Deploy api v2.3.1 to production?",
            request_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
            created_at=NOW - 120,
            deadline=NOW + 180,
            form_secret="s" * 32,
        )
        await store.create(hf, "fingerprint", "Request timed out after 5 minutes", [])
        outcome = Outcome(
            status=Status.ACCEPTED,
            action=Action.ACCEPT,
            content={"approved": True},
            by="Ada",
            via="web",
            at=NOW - 60,
            person=Person(channel="web", id="operator:ada", name="ada"),
        )
        await store.finish(hf.id, outcome, [], retain=False)


def with_request(redis_url: str, session: Session, stack: ExitStack) -> dict[str, str]:
    """An ended request in the audit trail."""
    asyncio.run(_ended_request(redis_url))
    return {}


async def _failed_delivery(redis_url: str) -> None:
    async with Redis.from_url(redis_url) as redis:
        schedule = list(Settings(_env_file=None).webhook_retry_schedule)
        store = WebhookStore(redis, schedule)
        body = json.dumps({"type": "request.ended"})
        at = NOW - sum(schedule) - 1  # so its last attempt failed a moment ago
        await store.queue("msg_4f2a9c1e", "request.ended", body, ["https://hooks.example.com/humangate"], at)
        for delay in [0.0, *schedule]:
            at += delay
            [(delivery, _body)] = await store.claim(at, 1, "token")
            await store.settle(delivery, "token", State.PENDING, at, "HTTP 500")


def with_failed_webhook(redis_url: str, session: Session, stack: ExitStack) -> dict[str, str]:
    """A webhook delivery that failed after every attempt."""
    asyncio.run(_failed_delivery(redis_url))
    return {}


SETUPS: dict[str, Setup] = {
    "slack": with_slack,
    "request": with_request,
    "failed-webhook": with_failed_webhook,
}


@pytest.mark.parametrize("session", ALL, ids=lambda s: s.name)
def test_every_console_session_prints_what_the_page_shows(
    session: Session, redis_url: str, tmp_path: Path
) -> None:
    for name, content in session.files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    with ExitStack() as stack:
        env: dict[str, str] = {}
        for need in session.needs:
            assert need in SETUPS, f"{session.name}: no setup named {need!r}; known: {sorted(SETUPS)}"
            env |= SETUPS[need](redis_url, session, stack)
        for command in session.commands:
            words = list(command.words)
            given = {}  # NAME=value words before the command: its environment, as a shell reads them
            while words and re.fullmatch(r"[A-Z][A-Z0-9_]*=\S*", words[0]):
                name, _, value = words.pop(0).partition("=")
                given[name] = value
            assert words[0] == "humangate", f"{session.name}: only humangate commands run"
            if words[1] in NOT_RUN and not command.shown:
                continue  # it serves until stopped; shown with output, it refuses to start: run it
            printed = run(words, tmp_path, env | given, redis_url)
            shown = "\n".join(command.shown)
            if pattern(command.shown).fullmatch(printed) is None:
                pytest.fail(
                    f"{session.name}: `{' '.join(command.words)}` printed\n{printed}\nthe page shows\n{shown}"
                )


def test_every_offline_command_is_shown_in_a_session() -> None:
    shown = {" ".join(c.words[1:3]) for s in ALL for c in s.commands} | {
        c.words[1] for s in ALL for c in s.commands
    }
    assert set(OFFLINE) <= shown, sorted(set(OFFLINE) - shown)


def test_no_shell_block_shows_output_outside_a_console_session() -> None:
    """A ```bash or ```sh block is a script (commands only): a command's output belongs in a
    ```console block, where it is checked."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, re.S):
            assert not re.search(r"^\s*\$ ", block, re.M), f"{page.name}: a session in a script block"
