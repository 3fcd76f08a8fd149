"""Hostile Teams answers are matched off the event loop: a real gateway process keeps answering
``/healthz`` while clicks whose values make the agent's patterns backtrack arrive at once, through
both the ``Action.Execute`` invoke and the ``Action.Submit`` fallback."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx

from schemas.answers import PATTERN_UNCHECKED
from tests.bench.bench_hostile_answers import HOSTILE_PATTERN, HOSTILE_VALUE
from tests.channels.teams.flows import ask, reply_card, texts
from tests.conftest import StartGateway
from tests.fakes.teams import FakeTeams, dumps
from tests.fakes.teams_activities import invoke, send, submit

FIELDS = 8
"""String properties with the hostile pattern, plus one whole number left unreadable (any number of
them shares one 0.1 s budget; the card with every error must still fit a Teams message)."""
CLICKS = 10
"""Hostile clicks of each kind sent at once."""
RESPONSIVE = 1.0
"""Seconds a /healthz probe may take while they are checked (on the event loop it took ~2.5 s)."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{f"f{i}": {"type": "string", "title": f"F{i}", "pattern": HOSTILE_PATTERN} for i in range(FIELDS)},
        "n": {"type": "integer", "title": "N"},
    },
}
ANSWERS = {f"F{i}": HOSTILE_VALUE for i in range(FIELDS)} | {"N": "many"}
"""A value that cannot be read as a number sends the other values through Teams' own answer check
(to name every failing field at once): the path that matched the patterns on the event loop."""


def headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json; charset=utf-8"}


def probe(url: str, done: threading.Event) -> list[float]:
    """Sequential /healthz round trips until ``done`` is set, from a thread of its own, so that
    the test's own event loop (sending the clicks) does not slow the probe down."""
    seconds: list[float] = []
    with httpx.Client(timeout=30.0) as client:
        while not done.is_set():
            started = time.perf_counter()
            response = client.get(f"{url}/healthz")
            assert response.status_code == 200
            seconds.append(time.perf_counter() - started)
            done.wait(0.01)  # pacing of the probe, not synchronisation
    return seconds


async def test_hostile_answers_in_both_paths_leave_the_event_loop_free(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Hostile patterns", SCHEMA)
    # One click first, so the signing keys are fetched and the process is warm before probing.
    first = await send(gateway.url, teams, invoke(teams, posted, "Send", ANSWERS))
    assert PATTERN_UNCHECKED in "\n".join(texts(reply_card(first.json())))
    clicks = [invoke(teams, posted, "Send", ANSWERS) for _ in range(CLICKS)]
    clicks += [submit(teams, posted, "Send", ANSWERS) for _ in range(CLICKS)]
    signed = [(click, teams.sign(click)) for click in clicks]
    done = threading.Event()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)

    async def flood() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30.0, limits=limits) as client:
            try:
                return await asyncio.gather(
                    *(
                        client.post(f"{gateway.url}/teams/messages", content=dumps(c), headers=headers(t))
                        for c, t in signed
                    )
                )
            finally:
                done.set()

    probes, responses = await asyncio.gather(asyncio.to_thread(probe, gateway.url, done), flood())
    assert all(response.status_code == 200 for response in responses), [r.text for r in responses]
    assert probes and max(probes) < RESPONSIVE, sorted(probes)[-5:]
    for response in responses[:CLICKS]:
        shown = "\n".join(texts(reply_card(response.json())))
        assert "must be a whole number" in shown and PATTERN_UNCHECKED in shown, shown
    assert not call.task.done()
