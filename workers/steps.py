"""The jobs the schedule fires (``gateway.core.schedule``): post an escalation step, send a
reminder; and the update of every step's post once a request ended (docs/escalation.md).

A step's post is the request rendered as its step says (channel, target), through the channel's
own ``deliver``; its references are kept in the request's hash (``post:<index>``), so that every
live post is updated with the outcome and reminded in its thread. ``escalated`` and ``reminded``
are the one place each of these happens (the audit trail records them there).
"""

from __future__ import annotations

import json
import logging
import time

from channels.approvers import who_may_answer
from channels.registry import CHANNELS
from gateway.core.escalation import escalation_text
from gateway.core.queue import JOB_TIMEOUT
from gateway.core.redis_keys import human_function as store_key
from schemas.errors import DeliveryError
from schemas.models import HumanFunction
from schemas.results import duration_text
from workers.happened import happened
from workers.loop import JobLoop, job_loop
from workers.outcomes import show_outcome

logger = logging.getLogger(__name__)

WORK_TIMEOUT = JOB_TIMEOUT - 10
"""Seconds a job's async work may take (as ``workers.jobs``'s)."""


def post_step(hf_id: str, arg: str) -> str:
    """Post step ``<index>`` of ``arg`` (``<index>:<channel>``) if its request is still pending."""
    loop = job_loop()
    return loop.run(_post_step(loop, hf_id, int(arg.split(":", 1)[0])), WORK_TIMEOUT)


def remind(hf_id: str, arg: str) -> str:
    """Send reminder ``<index>`` of ``arg`` in the thread of every live post of a pending request."""
    loop = job_loop()
    return loop.run(_remind(loop, hf_id, int(arg.split(":", 1)[0])), WORK_TIMEOUT)


def step_view(hf: HumanFunction, index: int) -> HumanFunction:
    """``hf`` as step ``index`` posts it: on its channel, at its target, with its post's references."""
    step = hf.steps[index]
    refs = hf.posts.get(index, {}).get("refs", {})
    update = {"channel": step.channel, "target": step.target, "refs": refs, "mention": step.mention}
    return hf.model_copy(update=update)


def live_posts(hf: HumanFunction) -> list[HumanFunction]:
    """Every post of ``hf`` (its own and its steps'), each as its channel shows it."""
    views = [hf] if hf.refs else []
    return views + [step_view(hf, index) for index in sorted(hf.posts) if index < len(hf.steps)]


def reminder_text(hf: HumanFunction) -> str:
    """The reminder replied in each live post's thread, naming who may answer."""
    left = duration_text(max(0.0, hf.deadline - time.time()))
    who = who_may_answer(hf) or "Anyone here may answer"
    return f"Reminder: this request is still waiting for an answer ({left} left). {who}."


async def escalated(loop: JobLoop, hf: HumanFunction, index: int) -> None:
    """Step ``index`` of ``hf`` posted: the one place an escalation happens. Its audit trail gets
    the post and the escalation (which counts ``humangate_escalations_total``), and so do the
    webhooks that want ``request.posted`` or ``request.escalated``."""
    step = hf.steps[index]
    logger.info("escalated hf=%s channel=%s step=%d after=%gs", hf.id, step.channel, index, step.after)
    where = {"channel": step.channel, "target": step.target, "step": index}
    await happened(loop, hf, "posted", **where)
    await happened(loop, hf, "escalated", **where)


async def reminded(loop: JobLoop, hf: HumanFunction, index: int, posts: list[HumanFunction]) -> None:
    """Reminder ``index`` of ``hf`` went to the threads of ``posts`` (each a post's view): the one
    place a reminder happens. Its audit trail gets one ``reminded`` per thread, and so do the
    webhooks that want ``request.reminded``."""
    channels = ",".join(view.channel for view in posts)
    logger.info("reminded hf=%s channel=%s reminder=%d in=%s", hf.id, hf.channel, index, channels)
    for view in posts:
        await happened(loop, hf, "reminded", channel=view.channel, target=view.target, step=index)


async def _post_step(loop: JobLoop, hf_id: str, index: int) -> str:
    store = loop.store
    hf = await loop.load(hf_id)
    if hf is None or index >= len(hf.steps):
        return "gone"
    if not hf.is_pending:
        return "ended before the step"
    if index in hf.posts:
        return "already posted"
    attempts = int(await store.redis.hincrby(store_key(hf_id), f"post-attempts:{index}", 1))
    view = step_view(hf, index).model_copy(update={"delivery_attempts": attempts})
    channel = CHANNELS[view.channel]
    client = await loop.client(view.channel)
    try:
        refs = await channel.deliver(view, loop.context(view), client)
    except DeliveryError as exc:
        logger.warning("hf=%s channel=%s step %d not posted: %s", hf_id, view.channel, index, exc)
        if exc.retryable:
            raise
        return "failed"
    hf = hf.model_copy(update={"fired": sorted({*hf.fired, index})})
    await store.set_step_post(hf_id, index, json_refs(view, refs), escalation_text(hf) or "")
    await escalated(loop, hf, index)
    hf = await store.get(hf_id)
    if not hf.is_pending:  # it ended while we posted: the update job may have missed this post
        await show_outcome(loop, step_view(hf, index), index, client)
    return "posted"


async def _remind(loop: JobLoop, hf_id: str, index: int) -> str:
    hf = await loop.load(hf_id)
    if hf is None or not hf.is_pending:
        return "ended before the reminder"
    text = reminder_text(hf)
    sent = []
    for view in live_posts(hf):
        client = await loop.client(view.channel)
        try:
            await CHANNELS[view.channel].remind(view, text, client)
            sent.append(view)
        except DeliveryError as exc:
            logger.warning("hf=%s channel=%s reminder %d not sent: %s", hf_id, view.channel, index, exc)
    await loop.store.note_reminded(hf_id, text)
    await reminded(loop, hf, index, sent)
    return f"reminded on {', '.join(view.channel for view in sent) or 'nothing'}"


async def update_step_posts(loop: JobLoop, hf: HumanFunction) -> int:
    """Show an ended ``hf``'s outcome on every step's post (the update job calls it); returns how
    many it updated."""
    updated = 0
    for index in sorted(hf.posts):
        if index >= len(hf.steps):
            continue
        view = step_view(hf, index)
        client = await loop.client(view.channel)
        updated += await show_outcome(loop, view, index, client)
    return updated


def json_refs(view: HumanFunction, refs: dict[str, object]) -> str:
    return json.dumps({"channel": view.channel, "target": view.target, "refs": refs})
