"""The Bolt app's listeners: where a new kind of Slack interaction is handled (docs/slack.md).

Every listener acks exactly once, with what its handler returns; ``ack()`` carries a submission's
field errors (``response_action="errors"``) or a notice, and a plain ``ack()`` closes the modal. A
handler that raises is acknowledged all the same: the failure is kept in the request's ``Exchange``
for the transport to answer (the gateway's 503 over HTTP, words for the person over Socket Mode).

humangate's own buttons and modals go to ``channels.slack.interactions.respond``, which ignores
anything that is not theirs; other actions, views and events are acknowledged and change nothing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext

from channels.base import Desk
from channels.slack.exchange import exchange_of
from channels.slack.interactions import respond
from channels.slack.middleware import patiently

ANY = re.compile(".*")
"""Matches every action id, callback id and event type."""


def add_listeners(app: AsyncApp, desk: Desk) -> None:
    """Register every listener of the app."""

    async def interaction(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        await answer(ack, context, lambda: respond(desk, body))

    async def acknowledge(ack: AsyncAck) -> None:
        await ack()

    app.action(ANY)(interaction)  # every button of a message (block_actions)
    app.view_submission(ANY)(interaction)  # a modal submitted
    app.view_closed(ANY)(acknowledge)  # a modal closed: nothing to record
    app.event(ANY)(acknowledge)  # the Events API: humangate subscribes to none
    app.shortcut(ANY)(acknowledge)


async def answer(
    ack: AsyncAck, context: AsyncBoltContext, handle: Callable[[], Awaitable[dict[str, Any]]]
) -> None:
    """Ack with what ``handle`` returns (tried again while Redis is away, within the budget), or, if
    it fails, with nothing, keeping the failure for the transport."""
    exchange = exchange_of(context)
    try:
        reply = await patiently(exchange, handle)
    except Exception as exc:
        exchange.failure = exc
        reply = {}
    await ack(**reply)
