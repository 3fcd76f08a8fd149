"""Permission prompts (docs/permissions.md; issue 36): a call the policy rules decide, against a no-op
MCP tool on the same SDK in the same run, and a call a person decides, against ``elicit``.

Run by hand from the repository root (pytest does not collect it):

    python tests/bench/bench_permissions.py                 # 300 rule-decided calls, 20 answered ones
    python tests/bench/bench_permissions.py --calls 1000 --concurrency 10 --answered 50

(a) ``approval_prompt`` calls an allow rule decides (``Bash(npm test *)``, 50 rules in the policy),
each its own ``tools/call`` on one 2026-07-28 client, ``--concurrency`` at a time: latency p50/p99
and calls per second, beside the same client calling ``noop_server.py``'s tool, and the ratio of
throughputs; also the same gateway answering calls with invalid arguments (no rule, no Redis): the
cost of any ``tools/call`` there, which a decision adds to. (b) Calls a person answers on the web
form, one at a time: from the call to its form link (the request opened and posted) and from the
answer to the result, for ``approval_prompt`` and ``elicit`` alike, and their ratios.
Targets: (a) p99 <= 10 ms and >= 0.8x the no-op's throughput, (b) ~1x.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from gateway.core.embedded import EmbeddedRedis
from tests.bench.bench_gateway import noop_server
from tests.bench.harness import measure, note, percentile, print_figures, start_serve, wait_ready

FORM_LINK = re.compile(r"(https?://[^\s;]+/f/[A-Za-z0-9._~-]+)")
KEY = "k-bench"
RULES = [f"Bash(tool{i} *)" for i in range(47)] + [
    "Bash(npm test *)",
    "Read",
    "WebFetch(domain:docs.python.org)",
]
POLICY = f"""[policies.bench]
callers = ["bench"]

[policies.bench.tools]
allow = {RULES!r}
deny  = ["Bash(rm -rf *)"]
""".replace("'", '"')
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def timed_calls(
    count: int, concurrency: int, call: Callable[[int], Awaitable[None]]
) -> tuple[list[float], float]:
    """Latencies (ms) of ``count`` calls, ``concurrency`` at a time, and calls per second."""
    latencies: list[float] = []
    queue = iter(range(count))

    async def lane() -> None:
        for i in queue:
            started = time.perf_counter()
            await call(i)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return latencies, count / (time.perf_counter() - started)


async def answered(
    client: Client, http: httpx.AsyncClient, tool: str, arguments: dict[str, Any], answer: dict[str, str]
) -> tuple[float, float]:
    """(ms from the call to its form link, ms from the answer's post to the result)."""
    link: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if (match := FORM_LINK.search(message or "")) and not link.done():
            link.set_result(match.group(1))

    started = time.perf_counter()
    task = asyncio.create_task(client.call_tool(tool, arguments, progress_callback=on_progress))
    form = await asyncio.wait_for(link, 30)
    opened = time.perf_counter()
    posted = await http.post(form, data=answer, follow_redirects=False)
    assert posted.status_code == 303, posted.text
    answered_at = time.perf_counter()
    result = await asyncio.wait_for(task, 30)
    assert not result.is_error, result
    return (opened - started) * 1000, (time.perf_counter() - answered_at) * 1000


async def main(opts: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "policy.toml").write_text(POLICY)
        env = {"HUMANGATE_API_KEYS": f"bench:{KEY}", "HUMANGATE_POLICY_FILE": str(work / "policy.toml")}
        with EmbeddedRedis(work / "redis", persistent=False) as redis:
            gateway = start_serve(redis.url, work, "permissions", env=env, poll_interval=0.2)
            try:
                await wait_ready(gateway, "permissions")
                async with noop_server(work) as noop_url:
                    return await measure_both(opts, gateway.url, noop_url)
            finally:
                gateway.stop()


async def measure_both(opts: argparse.Namespace, gateway_url: str, noop_url: str) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    async with (
        create_mcp_http_client() as plain,
        Client(streamable_http_client(f"{noop_url}/mcp", http_client=plain), mode="2026-07-28") as noop,
    ):
        await noop.list_tools()

        async def call_noop(i: int) -> None:
            await noop.call_tool("noop", {})

        await timed_calls(50, opts.concurrency, call_noop)
        noop_ms, noop_rate = await timed_calls(opts.calls, opts.concurrency, call_noop)
    headers = {"Authorization": f"Bearer {KEY}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(f"{gateway_url}/mcp", http_client=http), mode="2026-07-28") as gate,
    ):
        await gate.list_tools()

        async def call_rule(i: int) -> None:
            result = await gate.call_tool(
                "approval_prompt", {"tool_name": "Bash", "input": {"command": f"npm test -- --shard {i}"}}
            )
            assert '"behavior":"allow"' in result.content[0].text, result  # type: ignore[union-attr]

        async def call_invalid(i: int) -> None:
            result = await gate.call_tool("approval_prompt", {"tool_name": ""})
            assert result.is_error, result

        await timed_calls(50, opts.concurrency, call_rule)
        rule_ms, rule_rate = await timed_calls(opts.calls, opts.concurrency, call_rule)
        # The gateway's own cost of a tools/call, with no rule and no Redis: what a decision adds to.
        invalid_ms, invalid_rate = await timed_calls(opts.calls, opts.concurrency, call_invalid)
        figures |= {
            "noop p50/p99 ms": f"{percentile(noop_ms, 50):.2f} / {percentile(noop_ms, 99):.2f}",
            "noop calls/s": round(noop_rate, 1),
            "rule-decided p50/p99 ms": f"{percentile(rule_ms, 50):.2f} / {percentile(rule_ms, 99):.2f}",
            "rule-decided calls/s": round(rule_rate, 1),
            "rule-decided / noop throughput": round(rule_rate / noop_rate, 2),
            "invalid arguments p50/p99 ms": (
                f"{percentile(invalid_ms, 50):.2f} / {percentile(invalid_ms, 99):.2f}"
            ),
            "invalid arguments calls/s": round(invalid_rate, 1),
            "rule-decided / invalid arguments throughput": round(rule_rate / invalid_rate, 2),
        }
        note("answered calls")
        async with httpx.AsyncClient(timeout=30) as web:
            opened: dict[str, list[float]] = {"approval_prompt": [], "elicit": []}
            ended: dict[str, list[float]] = {"approval_prompt": [], "elicit": []}
            for i in range(opts.answered):
                prompt = {"tool_name": "Bash", "input": {"command": f"git push origin branch-{i}"}}
                a, b = await answered(
                    gate, web, "approval_prompt", prompt, {"hg-action": "accept", "f.decision": "allow"}
                )
                opened["approval_prompt"].append(a)
                ended["approval_prompt"].append(b)
                ask = {"message": f"Push branch-{i}?", "schema": APPROVAL, "uiType": "web"}
                a, b = await answered(gate, web, "elicit", ask, {"hg-action": "accept", "f.approved": "on"})
                opened["elicit"].append(a)
                ended["elicit"].append(b)
    for what, values in (("call to form link", opened), ("answer to result", ended)):
        mine, theirs = percentile(values["approval_prompt"], 50), percentile(values["elicit"], 50)
        figures[f"{what} p50 ms, prompt / elicit"] = f"{mine:.1f} / {theirs:.1f} ({mine / theirs:.2f}x)"
    return figures


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--answered", type=int, default=20)
    return parser.parse_args()


if __name__ == "__main__":
    figures = measure(main(parse()))
    if figures is None:
        raise SystemExit(2)
    print_figures("tests/bench/bench_permissions.py", figures, width=44)
