"""Answering a Discord interaction within its 3 seconds, however long recording the answer takes.

Discord drops an interaction not answered within 3 seconds. ``within_budget`` gives the work
``ACK_BUDGET`` seconds (``channels.budget``); if it is done, its reply goes back in the HTTP
response. If not, the interaction is acknowledged with a deferred update (the person sees nothing
change yet), the work goes on in the background, and its reply is sent afterwards through the
interaction's webhook: an edit of the message for an update, a follow-up for an ephemeral note
(``send_late``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from channels.budget import Reply
from channels.budget import within_budget as budget_
from channels.discord.rest import DiscordRest

ACK_BUDGET = 2.0
"""Seconds the work of an interaction may take before it is deferred (Discord allows 3)."""

CHANNEL_MESSAGE = 4
DEFERRED_UPDATE_MESSAGE = 6
UPDATE_MESSAGE = 7
"""Discord interaction response types used here."""

DEFERRED: dict[str, Any] = {"type": DEFERRED_UPDATE_MESSAGE}
"""The acknowledgement of work that is still running."""


async def within_budget(
    work: Coroutine[Any, Any, Reply],
    late: Callable[[Reply], Awaitable[None]],
    *,
    budget: float = ACK_BUDGET,
    label: str = "",
) -> Reply:
    """``work``'s reply if it comes within ``budget`` seconds; else ``DEFERRED``, and ``late(reply)``
    once the work is done."""
    return await budget_(work, budget=budget, fallback=DEFERRED, late=late, channel="discord", label=label)


async def send_late(rest: DiscordRest, application_id: str, token: str, reply: Reply) -> None:
    """Deliver the reply of a deferred interaction through its webhook (valid for 15 minutes)."""
    data = reply.get("data") or {}
    if reply.get("type") == UPDATE_MESSAGE:
        await rest.edit_original(application_id, token, data)
    elif reply.get("type") == CHANNEL_MESSAGE:
        await rest.followup(application_id, token, data)
