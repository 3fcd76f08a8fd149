"""Benchmark: what the approver check (docs/policies.md#approvers) adds to an answer.

Run by hand from the repository root (pytest does not collect it)::

    python tests/bench/bench_approvers.py --checks 20000 --answers 300

(a) The check alone, as each channel makes it, ``--checks`` times per case: a request without
approvers (the check returns at once) against one whose approver is a Slack user id, a Slack user
group (its members cached after the first ``usergroups.users.list`` to the fake Slack API server,
as a gateway process keeps them for 60 s), a Discord role, a Teams AAD object id, an operator.

(b) Whole answers: ``--answers`` signed Discord Approve clicks posted one after another to a real
gateway app in this process (embedded Redis, the fake Discord API), each answering a fresh request,
POST to reply (the reply is the ended message, so the answer is recorded by then); once for requests
without approvers and once for requests a Discord role gates, interleaved so the machine's load
falls on both alike.

Prints p50 / p99 (microseconds) per case and what approvers add at p99; the last line is the same
as JSON. The target (issue 18) is at most 1 ms p99 added per answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from slack_sdk.web.async_client import AsyncWebClient

from channels.approvers import approves
from channels.base import Desk, RenderContext
from channels.discord.embed import render_message
from channels.discord.interaction import held as discord_held
from channels.slack.client import SlackClient
from channels.slack.groups import GroupMembers, may_answer
from channels.teams.actions import held as teams_held
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.embedded import EmbeddedRedis
from schemas.models import HumanFunction
from schemas.policies import parse_policies
from schemas.settings import Settings, override_settings
from tests.bench.harness import measure, note, out, percentile, print_header
from tests.channels.inprocess import serving
from tests.fakes import discord_interactions
from tests.fakes.discord import CHANNEL_ID, CY, REVIEWERS_ROLE, FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.teams import BO

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


def request(approvers: list[str]) -> HumanFunction:
    now = time.time()
    return HumanFunction(
        id="0123456789abcdef",
        requester="bench",
        channel="slack",
        message="Deploy?",
        request_schema=APPROVAL,
        created_at=now,
        deadline=now + 3600,
        form_secret="s" * 32,
        approvers=approvers,
    )


class SlackDesk:
    """What ``channels.slack.groups.may_answer`` asks of a desk: its state, clock and client."""

    def __init__(self, client: SlackClient) -> None:
        self.state: dict[str, Any] = {}
        self._client = client

    def now(self) -> float:
        return time.time()

    async def client(self) -> SlackClient:
        return self._client


async def timed(check: Callable[[], Awaitable[bool]], n: int, expect: bool) -> list[float]:
    """Microseconds of each of ``n`` checks; every one must say ``expect``."""
    times = []
    for _ in range(n):
        start = time.perf_counter_ns()
        allowed = await check()
        times.append((time.perf_counter_ns() - start) / 1000)
        assert allowed is expect
    return times


def figures(times: list[float]) -> dict[str, float]:
    return {"p50_us": round(percentile(times, 50), 2), "p99_us": round(percentile(times, 99), 2)}


async def checks_alone(n: int) -> dict[str, dict[str, float]]:
    """(a) the check alone, per case."""
    discord_click = discord_interactions.click({"components": []}, "x", user=CY)
    teams_activity = {"from": {"id": BO.teams_id, "name": BO.name, "aadObjectId": BO.aad_id}}
    results: dict[str, dict[str, float]] = {}
    with FakeSlack().running() as fake:
        api = AsyncWebClient(token=fake.token, base_url=fake.api_url, timeout=10)
        desk = SlackDesk(SlackClient(api=api, target="C123"))
        open_ = request([])
        by_id = request(["slack:U2"])
        by_group = request(["slack:group:S0ONCALL"])
        await may_answer(cast(Desk, desk), by_group, "U2")  # the one look-up; cached from here on
        assert isinstance(desk.state["group_members"], GroupMembers)
        lookups = len(fake.server.calls_to("/api/usergroups.users.list"))

        async def slack(hf: HumanFunction, user: str) -> bool:
            return await may_answer(cast(Desk, desk), hf, user)

        cases: dict[str, tuple[Callable[[], Awaitable[bool]], bool]] = {
            "no approvers (slack)": (lambda: slack(open_, "U2"), True),
            "slack user id": (lambda: slack(by_id, "U2"), True),
            "slack user group, cached": (lambda: slack(by_group, "U2"), True),
            "slack user group, cached, refused": (lambda: slack(by_group, "U3"), False),
        }
        discord_hf = request([f"discord:role:{REVIEWERS_ROLE}"])
        teams_hf = request([f"teams:{BO.aad_id.upper()}"])
        operator_hf = request(["operator:alice"])

        async def sync(check: Callable[[], bool]) -> bool:
            return check()

        cases |= {
            "no approvers (discord)": (
                lambda: sync(lambda: approves(open_, discord_held(discord_click))),
                True,
            ),
            "discord role": (lambda: sync(lambda: approves(discord_hf, discord_held(discord_click))), True),
            "teams aad object id": (
                lambda: sync(lambda: approves(teams_hf, teams_held(teams_activity))),
                True,
            ),
            "operator": (lambda: sync(lambda: approves(operator_hf, ["operator:alice"])), True),
        }
        for name, (check, expect) in cases.items():
            await timed(check, min(n, 1000), expect)  # warm up
            results[name] = figures(await timed(check, n, expect))
        extra = len(fake.server.calls_to("/api/usergroups.users.list")) - lookups
        if extra:
            raise AssertionError(f"{extra} group look-ups after the first: the cache did not hold")
    return results


async def whole_answers(n: int) -> dict[str, dict[str, float]]:
    """(b) signed Discord clicks answering real requests through a real gateway app."""
    times: dict[str, list[float]] = {"without approvers": [], "with approvers (discord role)": []}
    fake = FakeDiscord()
    with (
        tempfile.TemporaryDirectory(prefix="hg-bench-approvers-") as work,
        EmbeddedRedis(Path(work) / "redis", persistent=False) as redis,
        fake.server.running(),
    ):
        os.environ.update(fake.env())
        settings = Settings(redis_url=redis.url, data_dir=Path(work) / "data", _env_file=None)
        override_settings(settings)
        unlimited = "rate_limit = 1000000\nmax_pending = 1000000\n"
        plain = parse_policies(f"[policies.plain]\n{unlimited}")
        gated = parse_policies(
            f'[policies.gated]\n{unlimited}approvers = ["discord:role:{REVIEWERS_ROLE}"]\n'
        )
        async with serving(settings) as (runtime, client):
            for i in range(n + 20):
                for case in times:
                    runtime.service.policies = gated if case.startswith("with ") else plain
                    hf, _ = await runtime.service.open(
                        ANONYMOUS_CALLER, "discord", f"Deploy {case} {i}?", APPROVAL
                    )
                    ctx = RenderContext(form_url=runtime.settings.public_url, now=time.time())
                    message = render_message(hf, ctx) | {
                        "id": f"9{i:018d}",
                        "channel_id": CHANNEL_ID,
                        "flags": 0,
                    }
                    click = discord_interactions.click(
                        message, discord_interactions.buttons(message)["Approve"], user=CY
                    )
                    body = json.dumps(click).encode()
                    headers = {"Content-Type": "application/json"} | discord_interactions.sign(body)
                    start = time.perf_counter_ns()
                    response = await client.post("/discord/interactions", content=body, headers=headers)
                    elapsed = (time.perf_counter_ns() - start) / 1000
                    if response.status_code != 200 or response.json().get("type") != 7:
                        raise AssertionError(
                            f"the answer was not recorded: {response.status_code} {response.text}"
                        )
                    if i >= 20:  # the first ones warm the app up
                        times[case].append(elapsed)
        override_settings(None)
    return {case: figures(values) for case, values in times.items()}


async def run(opts: argparse.Namespace) -> dict[str, Any]:
    note(f"(a) {opts.checks} checks per case")
    alone = await checks_alone(opts.checks)
    note(f"(b) {opts.answers} Discord answers per case")
    answers = await whole_answers(opts.answers) if opts.answers else {}
    return {"checks": alone, "answers": answers}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=20000, help="checks per case in (a)")
    parser.add_argument("--answers", type=int, default=300, help="answers per case in (b); 0 skips (b)")
    opts = parser.parse_args()
    result = measure(run(opts))
    if result is None:
        return 2
    print_header(" ".join(["python", *sys.argv]))
    out("(a) the check alone          p50 us    p99 us")
    for name, fig in result["checks"].items():
        out(f"  {name:<34}{fig['p50_us']:>8}{fig['p99_us']:>10}")
    base = result["checks"]["no approvers (slack)"]["p99_us"]
    worst = max(fig["p99_us"] for fig in result["checks"].values())
    out(f"  added at p99, worst case: {worst - base:.2f} us")
    if result["answers"]:
        out("(b) whole Discord answers      p50 us    p99 us")
        for name, fig in result["answers"].items():
            out(f"  {name:<34}{fig['p50_us']:>8}{fig['p99_us']:>10}")
        plain, gated = result["answers"].values()
        p50, p99 = gated["p50_us"] - plain["p50_us"], gated["p99_us"] - plain["p99_us"]
        out(f"  added: p50 {p50:.0f} us, p99 {p99:.0f} us")
    out(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
