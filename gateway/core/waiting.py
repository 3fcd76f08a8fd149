"""The wait of one call for its Human Function to end.

The call reads nothing from Redis while it waits: the process's one events reader
(``gateway.core.events``) hands it the outcome the moment the request ends, and between events the
call only wakes on a timer to report progress. A Redis outage therefore cannot end a call; only
an outcome or the deadline can. At the deadline the call records the expiry itself (the reaper
would, within a second); if Redis is unreachable then, the call still ends on time with the
timeout result, and the reaper records it once Redis is back.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from channels.display import AGENT_VIA
from gateway.core import hush
from gateway.core.escalation import escalation_text
from gateway.core.events import Events, Waiter
from gateway.core.service import HumanFunctionService
from schemas.errors import ClosedError, StoreUnavailableError, UnknownRequestError
from schemas.models import HumanFunction, Outcome
from schemas.results import EXPIRED_VIA

logger = logging.getLogger(__name__)

FIRST_PAUSE_MIN = 0.5
"""The first pause between two ticks is at least this part of the poll interval (and at most all)."""

NOT_A_PERSON = {EXPIRED_VIA, AGENT_VIA}
"""``Outcome.via`` of endings no person made (their results are never kept for a later call)."""


class ResultSource(Protocol):
    """What a tool's result reads of its request (a ``HumanFunction``, or ``Asked``)."""

    @property
    def id(self) -> str: ...

    @property
    def request_schema(self) -> dict[str, Any]: ...

    @property
    def other_fields(self) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class Asked:
    """What a waiting call keeps of its Human Function: a few hundred bytes where the whole model
    is about four KiB, which ten thousand waiting calls would each hold for minutes (the schema and
    the "Other" fields are the question's own objects, not copies). At the deadline the request is
    read back whole to end it."""

    id: str
    channel: str
    created_at: float
    deadline: float
    full_deadline: float | None
    """The deadline it gets once a person starts answering (``None``: no idle timeout)."""
    on_timeout: str
    policy: str | None
    delivery_error: str | None
    escalated: str | None
    """Which escalation steps had posted when the call began waiting (``escalation_text``)."""
    request_schema: dict[str, Any]
    other_fields: dict[str, str]

    @classmethod
    def of(cls, hf: HumanFunction, schema: dict[str, Any], other_fields: dict[str, str]) -> Asked:
        """``hf``'s view, sharing ``schema`` and ``other_fields`` (equal to ``hf``'s) with the caller."""
        return cls(
            hf.id,
            hf.channel,
            hf.created_at,
            hf.deadline,
            hf.full_deadline,
            hf.on_timeout,
            hf.policy,
            hf.delivery_error,
            escalation_text(hf),
            schema,
            other_fields,
        )

    @property
    def timeout_seconds(self) -> float:
        return self.deadline - self.created_at


@dataclass(frozen=True, slots=True)
class Tick:
    """What a waiting call reports at each check (an MCP progress notification)."""

    seconds_left: float
    delivery_error: str | None
    idle: bool = False
    """It waits under an idle timeout: its full timeout starts when a person starts answering."""
    store_available: bool = True
    started: bool = False
    """A person started answering a request opened with an idle timeout (it has its full timeout)."""
    timeout: float = 0.0
    """The request's whole timeout now, in seconds (the progress ``total``)."""
    escalated: str | None = None
    """Which escalation steps posted (``escalated to teams after 2 minutes``), if any."""


OnTick = Callable[[Tick], Awaitable[None]]


class GatewayStopping(Exception):
    """This gateway process is shutting down: the call ends, its request stays pending."""


async def wait_for_end(
    service: HumanFunctionService, events: Events, asked: Asked, on_tick: OnTick
) -> Outcome:
    """Wait until the request ``asked`` ends (answered, expired or withdrawn) and return how it ended.

    Reports a tick at once and then every poll interval: the first pause is a random part of the
    interval (at least half), so calls opened together do not all tick together and the process's
    work is spread evenly over each interval. A regular tick that falls due while the process is
    busy handing answers over waits for them, at most ``hush.longest(interval)``, and the next one
    keeps its time (``gateway.core.hush``); a change (a person started, an escalation) ticks at
    once. Cancelling this coroutine (client gone) leaves the request pending for a later
    re-attach, and so does ``GatewayStopping``. The caller notes the answer ``returned`` once its
    client received it (``gateway.mcp.delivery``).
    """
    waiter = events.watch(asked.id, asked.deadline, asked.delivery_error)
    waiter.escalated = waiter.escalated or asked.escalated
    try:
        interval = service.settings.poll_interval
        pause = interval * random.uniform(FIRST_PAUSE_MIN, 1.0)  # spreading ticks, not secrecy
        while waiter.ended is None:
            if events.stopping:
                raise GatewayStopping(asked.id)
            if waiter.deadline != asked.deadline:  # a person started answering: the full timeout
                asked = replace(asked, deadline=waiter.deadline, full_deadline=None)
            left = asked.deadline - service.clock()
            if left <= 0:
                return await _expire(service, asked)
            tick = Tick(
                left,
                waiter.note,
                asked.full_deadline is not None,
                events.available,
                waiter.started,
                asked.timeout_seconds,
                waiter.escalated,
            )
            await on_tick(tick)
            if waiter.ended is None:
                woken = await waiter.sleep(min(pause, left))
                pause = interval
                remaining = asked.deadline - service.clock()
                if not woken and remaining > 0:  # a regular tick: answers being handed over go first
                    waited = await after_answers(events.hush, waiter, min(hush.longest(interval), remaining))
                    pause = max(0.0, interval - waited)  # the next tick keeps its own time
        outcome = waiter.ended
        events.hush.busy()  # its result is on its way: other calls' ticks wait a moment more
    finally:
        events.unwatch(waiter)
    return outcome


async def after_answers(quiet: hush.Hush, waiter: Waiter, longest: float) -> float:
    """Wait while this process is busy handing answers over, at most ``longest`` seconds (less if
    ``waiter``'s request ends or changes); return the seconds waited."""
    if waiter.ended is not None or quiet.left() == 0:
        return 0.0
    loop = asyncio.get_running_loop()
    began = loop.time()
    quiet.hold(waiter.wake)  # one timer for every held tick, not one per tick
    try:
        await waiter.sleep(longest)
    finally:
        quiet.release(waiter.wake)
    return loop.time() - began


def returned(service: HumanFunctionService, hf_id: str, outcome: Outcome) -> None:
    """Note (in the background) that a client received a person's answer to ``hf_id``, so an
    identical call asks again instead of receiving it a second time."""
    if outcome.via not in NOT_A_PERSON:
        service.returned.mark(hf_id)


async def _expire(service: HumanFunctionService, asked: Asked) -> Outcome:
    try:
        hf = await service.store.get(asked.id)  # read back whole to end it (its webhooks, its posts)
        if not hf.is_pending and hf.outcome is not None:
            return hf.outcome  # ended an instant ago by someone else; its event is on its way
        ended = await service.expire(hf)
    except ClosedError:
        try:  # ended an instant ago by someone else; its event is on its way, but read it now
            ended = await service.store.get(asked.id)
        except (StoreUnavailableError, UnknownRequestError):
            return service.expired_outcome(asked)
    except UnknownRequestError:
        return service.expired_outcome(asked)
    except StoreUnavailableError:
        logger.warning("deadline passed while Redis is unavailable hf=%s channel=%s", asked.id, asked.channel)
        return service.expired_outcome(asked)
    assert ended.outcome is not None
    return ended.outcome
