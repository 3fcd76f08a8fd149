"""A click's work that outlasts its budget is answered at once and finishes in the background."""

from __future__ import annotations

import asyncio

from channels.teams.inbound import STILL_WORKING, card_reply, message_reply, within_budget


async def test_work_within_the_budget_is_the_reply() -> None:
    async def quick() -> dict[str, object]:
        return card_reply({"type": "AdaptiveCard"})

    reply = await within_budget(quick(), "hf1", budget=5)
    assert reply["type"] == "application/vnd.microsoft.card.adaptive"


async def test_slow_work_is_answered_with_a_message_and_still_finishes() -> None:
    release, finished = asyncio.Event(), asyncio.Event()

    async def slow() -> dict[str, object]:
        await release.wait()
        finished.set()
        return card_reply({"type": "AdaptiveCard"})

    reply = await within_budget(slow(), "hf2", budget=0.05)
    assert reply == message_reply(STILL_WORKING) and not finished.is_set()
    release.set()
    await asyncio.wait_for(finished.wait(), 5)
    assert finished.is_set()
