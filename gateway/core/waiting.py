"""The wait of one call for its Human Function to end.

The call reads nothing from Redis while it waits: the process's one events reader
(``gateway.core.events``) hands it the outcome the moment the request ends, and between events the
call only wakes on a timer to report progress. A Redis outage therefore cannot end a call; only
an outcome or the deadline can. At the deadline the call records the expiry itself (the reaper
would, within a second); if Redis is unreachable then, the call still ends on time with the
timeout result, and the reaper records it once Redis is back.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from channels.display import AGENT_VIA
from gateway.core.escalation import escalation_text
from gateway.core.events import Events
from gateway.core.service import HumanFunctionService
from schemas.errors import ClosedError, StoreUnavailableError, UnknownRequestError
from schemas.models import HumanFunction, Outcome
from schemas.results import EXPIRED_VIA

logger = logging.getLogger(__name__)

FIRST_PAUSE_MIN = 0.5
"""The first pause between two ticks is at least this part of the poll interval (and at most all)."""

NOT_A_PERSON = {EXPIRED_VIA, AGENT_VIA}
"""``Outcome.via`` of endings no person made (their results are never kept for a later call)."""


@dataclass(frozen=True, slots=True)
class Tick:
    """What a waiting call reports at each check (an MCP progress notification)."""

    hf: HumanFunction
    seconds_left: float
    delivery_error: str | None
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
    service: HumanFunctionService, events: Events, hf: HumanFunction, on_tick: OnTick
) -> Outcome:
    """Wait until ``hf`` ends (answered, expired or withdrawn) and return how it ended.

    Reports a tick at once and then at least every poll interval: the first pause is a random
    part of the interval (at least half), so calls opened together do not all tick together and
    the process's work is spread evenly over each interval. Cancelling this coroutine (client
    gone) leaves ``hf`` pending for a later re-attach, and so does ``GatewayStopping``. The caller
    notes the answer ``returned`` once its client received it (``gateway.mcp.delivery``).
    """
    waiter = events.watch(hf.id, hf.deadline, hf.delivery_error)
    waiter.escalated = waiter.escalated or escalation_text(hf)
    try:
        interval = service.settings.poll_interval
        pause = interval * random.uniform(FIRST_PAUSE_MIN, 1.0)  # spreading ticks, not secrecy
        while waiter.ended is None:
            if events.stopping:
                raise GatewayStopping(hf.id)
            if waiter.deadline != hf.deadline:  # a person started answering: the full timeout
                hf = hf.model_copy(update={"deadline": waiter.deadline, "full_deadline": None})
            left = hf.deadline - service.clock()
            if left <= 0:
                return await _expire(service, hf)
            tick = Tick(
                hf, left, waiter.note, events.available, waiter.started, hf.timeout_seconds, waiter.escalated
            )
            await on_tick(tick)
            if waiter.ended is None:
                await waiter.sleep(min(pause, left))
                pause = interval
        outcome = waiter.ended
    finally:
        events.unwatch(waiter)
    return outcome


def returned(service: HumanFunctionService, hf: HumanFunction, outcome: Outcome) -> None:
    """Note (in the background) that a client received a person's answer, so an identical call
    asks again instead of receiving it a second time."""
    if outcome.via not in NOT_A_PERSON:
        service.returned.mark(hf.id)


async def _expire(service: HumanFunctionService, hf: HumanFunction) -> Outcome:
    try:
        ended = await service.expire(hf)
    except ClosedError:
        try:  # ended an instant ago by someone else; its event is on its way, but read it now
            ended = await service.store.get(hf.id)
        except (StoreUnavailableError, UnknownRequestError):
            return service.expired_outcome(hf)
    except StoreUnavailableError:
        logger.warning("deadline passed while Redis is unavailable hf=%s channel=%s", hf.id, hf.channel)
        return service.expired_outcome(hf)
    assert ended.outcome is not None
    return ended.outcome
