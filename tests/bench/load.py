"""A load client for ``bench_gateway.py`` part (a), run as its own process: opens ``--count``
waiting ``elicit`` calls and holds them, talking to its parent in JSON lines.

stdout: ``{"event": "opened", ...}`` after each batch, ``{"event": "ready", ...}`` once all wait,
and ``{"event": "report", ...}`` for every ``report`` line read on stdin. Closing stdin ends it at
once (the calls are dropped, their Human Functions stay pending).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench.harness import ERAS, RUN_ID, SSE_NOISE, Call, Era, Fleet

STEP_TIMEOUT = 600.0


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def run(url: str, count: int, batch: int, label: str, era: Era) -> None:
    async with Fleet(url, era) as fleet:
        calls: list[Call] = []
        failures: list[str] = []
        for start in range(0, count, batch):
            chunk = [Call(f"bench {RUN_ID} {label} #{i}") for i in range(start, min(count, start + batch))]
            for call in chunk:
                fleet.start(call)
            await asyncio.wait_for(asyncio.gather(*(c.linked.wait() for c in chunk)), STEP_TIMEOUT)
            for call in chunk:
                if call.form_url and not call.done.is_set():
                    calls.append(call)
                else:
                    failures.append(call.error or call.text[:120] or "ended without a form link")
            emit(event="opened", n=len(calls), failed=len(failures))
        emit(
            event="ready",
            waiting=len(calls),
            failed=len(failures),
            first_failure=failures[0] if failures else None,
        )
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while await reader.readline():
            ended = [c for c in calls if c.done.is_set()]
            first = next((c.error or c.text[:120] for c in ended), None)
            emit(event="report", waiting=len(calls) - len(ended), ended=len(ended), first_error=first)
    os._exit(0)  # never wait for thousands of streams to close politely


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--label", default="load")
    parser.add_argument("--era", choices=ERAS, default="2026-07-28")
    args = parser.parse_args()
    logging.getLogger("mcp.client.streamable_http").addFilter(SSE_NOISE)
    try:
        asyncio.run(run(args.url, args.count, args.batch, args.label, args.era))
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
