"""Render time of an agent's Markdown on every surface (docs/rendering.md; issue 35).

Run by hand from the repository root (pytest does not collect it):

    python tests/bench/bench_render.py                  # 8 KiB rich message and the hostile table, 300 rounds
    python tests/bench/bench_render.py --rounds 1000 --json out.json

For each registered channel, through the same ``Channel.render`` the workers call: the render of a
pending request whose message is ~8 KiB of ``tests/channels/markdown_cases.RICH`` repeated, with the
message already parsed (the parse is cached per process, once per request), and the parse itself
(cache cleared before each round). Then, for every hostile input, parse plus render on the slowest
surface, and the worst of them. Figures are the median and p99 in milliseconds on one core; the
targets are p99 <= 5 ms for the 8 KiB render and <= 50 ms for the worst hostile input.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from channels.base import RenderContext
from channels.document.parse import parse
from channels.registry import CHANNELS
from channels.web.markdown import _cleaned_html as cleaned_html
from schemas.models import HumanFunction
from tests.bench.harness import out
from tests.channels.markdown_cases import HOSTILE, RICH

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
MESSAGE = ((RICH + "\n\n") * (8192 // len(RICH) + 1))[:8192]
CTX = RenderContext(form_url="https://gate.example/f/0123456789abcdef.secret", now=1_800_000_000.0)


def request(message: str) -> HumanFunction:
    return HumanFunction(
        id="0123456789abcdef",
        requester="ci-bot",
        channel="web",
        message=message,
        request_schema=APPROVAL,
        created_at=CTX.now,
        deadline=CTX.now + 300,
        form_secret="s" * 32,
    )


def timed(work: Callable[[], object], rounds: int, before: Callable[[], None] = lambda: None) -> list[float]:
    times = []
    gc.collect()
    for _ in range(rounds):
        before()
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)


def figures(times: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(times), 3),
        "p99": round(times[max(0, int(len(times) * 0.99) - 1)], 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hf = request(MESSAGE)
    results: dict[str, dict[str, float]] = {}
    results["parse 8 KiB"] = figures(timed(lambda: parse(MESSAGE), args.rounds, parse.cache_clear))
    parse(MESSAGE)
    for name, channel in CHANNELS.items():
        # The web keeps each message's cleaned HTML per process: cleared, so each round renders it.
        rounds = timed(lambda c=channel: c.render(hf, CTX), args.rounds, cleaned_html.cache_clear)  # type: ignore[misc]
        results[f"render {name}"] = figures(rounds)
    hostile: dict[str, float] = {}
    hostile_rounds = max(5, args.rounds // 20)
    for case in HOSTILE:
        one = request(case.text)
        worst = 0.0
        for channel in CHANNELS.values():

            def clear() -> None:
                parse.cache_clear()
                cleaned_html.cache_clear()

            times = timed(lambda c=channel, h=one: c.render(h, CTX), hostile_rounds, clear)  # type: ignore[misc]
            worst = max(worst, figures(times)["p99"])
        hostile[case.name] = worst
    slowest = max(hostile, key=lambda name: hostile[name])
    results["hostile worst (parse + render, slowest surface)"] = {
        "median": hostile[slowest],
        "p99": hostile[slowest],
    }
    width = max(len(name) for name in results)
    out(f"{'figure':<{width}}  median ms  p99 ms")
    for name, row in results.items():
        out(f"{name:<{width}}  {row['median']:9.3f}  {row['p99']:6.3f}")
    out(f"worst hostile input: {slowest!r}; every hostile input (p99 ms, slowest surface):")
    for name, value in sorted(hostile.items(), key=lambda item: -item[1]):
        out(f"  {name:<28} {value:8.3f}")
    line = json.dumps({"results": results, "hostile": hostile})
    out(line)
    if args.json:
        args.json.write_text(line + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
