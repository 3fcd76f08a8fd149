"""The RQ jobs of humangate. No business rules here: load, call the channel, record.

RQ calls these synchronously in a worker; each hands its async body to the process's long-lived
job loop (``workers.loop``), which holds the Redis connections and platform clients.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from rq import get_current_job
from rq.exceptions import AbandonedJobError
from rq.timeouts import JobTimeoutException

from channels.registry import CHANNELS
from gateway.core.queue import DELIVERY_RETRY_INTERVALS, JOB_TIMEOUT
from schemas.errors import DeliveryError
from schemas.models import HumanFunction
from schemas.settings import Settings
from workers.happened import happened
from workers.loop import JobLoop, job_loop
from workers.outcomes import OWN_POST, show_outcome
from workers.steps import update_step_posts

logger = logging.getLogger(__name__)

WORK_TIMEOUT = JOB_TIMEOUT - 10
"""Seconds a job's async work may take; less than RQ's job timeout, so the job itself reports it."""


def deliver(hf_id: str) -> str:
    """Post a Human Function on its channel, once: a retried job never posts a second message."""
    loop = job_loop()
    return loop.run(_deliver(loop, hf_id, _retries_left()), WORK_TIMEOUT)


def update(hf_id: str) -> str:
    """Show an ended Human Function's outcome on its channel and disable the inputs."""
    loop = job_loop()
    return loop.run(_update(loop, hf_id), WORK_TIMEOUT)


def delivery_failed(job: Any, connection: Any, exc_type: Any, value: Any, traceback: Any) -> None:
    """RQ failure callback: tell the waiting agent what went wrong, unless the job already did."""
    if isinstance(value, DeliveryError):
        return  # the job recorded its own note
    hf_id = str(job.args[0])
    if isinstance(value, AbandonedJobError):
        what = "the worker delivering it stopped"
    elif isinstance(value, JobTimeoutException | TimeoutError):
        what = f"it took longer than {JOB_TIMEOUT} s"
    else:
        what = f"an unexpected error ({type(value).__name__}: {value})"
    retries = int(job.retries_left or 0)
    note = f"delivery failed: {what}; " + (
        "retrying"
        if retries
        else "gave up (no retries left; see the worker's log), so the request waits, likely unseen, "
        "until it times out (withdraw it and ask again)"
    )
    logger.warning("delivery failed hf=%s: %s", hf_id, note)
    loop = job_loop()
    loop.run(loop.store.note_delivery(hf_id, note), WORK_TIMEOUT)


def _retries_left() -> int | None:
    """Retries RQ still has for the running job; ``None`` when not run by RQ (the caller retries)."""
    job = get_current_job()
    return None if job is None else int(job.retries_left or 0)


def delivery_note(channel: str, error: DeliveryError, attempt: int, retries_left: int | None) -> str:
    """What the waiting agent is told about a failed delivery attempt: what failed, and whether it
    is retried or given up (``error`` says only what failed: retrying is decided here)."""
    if not error.retryable:
        return f"delivery to {channel} failed: {error}; not retrying (fix this, then ask again)"
    if retries_left is None or retries_left:
        wait = retry_wait(error, attempt)
        return f"delivery to {channel} failed (attempt {attempt}): {error}; retrying in {wait} s"
    return (
        f"delivery to {channel} gave up after {attempt} attempts: {error}; the request waits, likely "
        f"unseen, until it times out (withdraw it and ask again once {channel} works)"
    )


def retry_wait(error: DeliveryError, attempt: int) -> int:
    """Seconds before the retry of a delivery's ``attempt``: the next of the fixed intervals, or the
    wait the platform asked for (``error.retry_after``, a 429's) when that is longer."""
    wait = DELIVERY_RETRY_INTERVALS[min(attempt, len(DELIVERY_RETRY_INTERVALS)) - 1]
    return max(wait, math.ceil(error.retry_after or 0))


def _wait_before_retry(seconds: int) -> None:
    """Make RQ schedule the running job's next retry ``seconds`` from now (when run by RQ)."""
    job = get_current_job()
    if job is None or not job.retry_intervals or not job.retries_left:
        return
    intervals = list(job.retry_intervals)
    index = max(len(intervals) - job.retries_left, 0)  # the one ``Job.get_retry_interval`` reads
    # RQ schedules a retry at a whole second (its scheduled registry truncates the time), up to a
    # second early: one more keeps the retry no sooner than the platform asked.
    intervals[index] = seconds + 1
    job.retry_intervals = intervals


POSTED_STEP = 0
"""The step a delivery posts (the first; escalation steps post later ones)."""


def posted_to(hf: HumanFunction, settings: Settings) -> str | None:
    """Where ``hf``'s channel posts it: its policy's target, else the channel's configured one."""
    setting = CHANNELS[hf.channel].target_setting
    return hf.target or (None if setting is None else getattr(settings, setting, None))


async def _deliver(loop: JobLoop, hf_id: str, retries_left: int | None) -> str:
    store = loop.store
    hf = await loop.load(hf_id)
    if hf is None:
        return "gone"
    if not hf.is_pending:
        return "ended before delivery"  # an update job shows the outcome if an attempt posted
    if hf.refs:
        return "already delivered"
    attempt = await store.count_delivery_attempt(hf_id)
    hf = hf.model_copy(update={"delivery_attempts": attempt})
    channel = CHANNELS[hf.channel]
    client = await loop.client(hf.channel)
    try:
        refs = await channel.deliver(hf, loop.context(hf), client)
    except DeliveryError as exc:
        note = delivery_note(hf.channel, exc, attempt, retries_left)
        await store.note_delivery(hf_id, note)
        logger.warning("hf=%s channel=%s %s", hf_id, hf.channel, note)
        if exc.retryable and (retries_left is None or retries_left):
            if exc.retry_after:
                _wait_before_retry(retry_wait(exc, attempt))
            raise
        return "failed"
    await store.set_refs(hf_id, refs)
    await happened(
        loop, hf, "posted", channel=hf.channel, target=posted_to(hf, loop.settings), step=POSTED_STEP
    )
    if hf.delivery_error:
        await store.note_delivery(hf_id, None)
    logger.info("delivered hf=%s channel=%s attempt=%d", hf_id, hf.channel, attempt)
    # It may have ended while we posted, before the refs existed for the update job.
    hf = await store.get(hf_id)
    if not hf.is_pending:
        await show_outcome(loop, hf, OWN_POST, client)
        await store.synced(hf_id)
    return "delivered"


async def _update(loop: JobLoop, hf_id: str) -> str:
    store = loop.store
    hf = await loop.load(hf_id)
    if hf is None:
        await store.synced(hf_id)
        return "gone"
    if hf.is_pending and not hf.approvals:
        return "still pending"  # (a pending request with approvals: its posts show the count)
    channel = CHANNELS[hf.channel]
    client = await loop.client(hf.channel)
    if not hf.refs and hf.delivery_attempts:
        # A delivery may have posted without recording where (its worker stopped in between).
        refs = await channel.find_post(hf, client)
        if refs:
            await store.set_refs(hf_id, refs)
            hf = hf.model_copy(update={"refs": refs})
    if hf.refs and await show_outcome(loop, hf, OWN_POST, client):
        logger.info("updated hf=%s channel=%s status=%s", hf_id, hf.channel, hf.status)
    steps = await update_step_posts(loop, hf)  # escalation widens: every step's post shows it too
    await store.synced(hf_id)
    return "updated" if hf.refs or steps else "nothing posted"
