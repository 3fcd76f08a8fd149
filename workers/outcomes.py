"""Showing an ended request's outcome on one of its posts, through its channel's ``update``.

A channel that edits its post in place (Slack, Discord, Teams) is asked again whenever a job wants
the post to show the request as it is now: editing twice shows the same thing. A channel that sends
the outcome as a new message (``Channel.edits`` false: email) is asked only once the request ended,
and once per post: the claim is kept in the request's hash, so neither a retried job, a second
update job nor the delivery job that saw the request end while it posted sends it again.
"""

from __future__ import annotations

import contextlib
from typing import Any

from channels.registry import CHANNELS
from schemas.errors import StoreUnavailableError
from schemas.models import HumanFunction
from workers.loop import JobLoop

OWN_POST = 0
"""The post index of a request's own post (its steps' posts have their step's index, from 1)."""


async def show_outcome(loop: JobLoop, view: HumanFunction, post: int, client: Any) -> bool:
    """Ask ``view``'s channel to show it on post ``post``; False when nothing was asked (a channel
    that sends new messages, while the request is pending or once it was sent)."""
    channel = CHANNELS[view.channel]
    if channel.edits:
        await channel.update(view, loop.context(view), client)
        return True
    if view.is_pending or not await loop.store.claim_outcome(view.id, post):
        return False
    try:
        await channel.update(view, loop.context(view), client)
    except BaseException:
        with contextlib.suppress(StoreUnavailableError):
            await loop.store.release_outcome(view.id, post)
        raise
    return True
