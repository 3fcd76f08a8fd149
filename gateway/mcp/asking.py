"""The flow of every tool that asks a person: open a Human Function, report progress while it
waits, and turn how it ended into the tool's result. Tools differ only in how their arguments
become a message and a flat schema, and in how an outcome becomes their result."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import mcp_types as types

from gateway.core.metrics import OPENED
from gateway.core.store import Opened
from gateway.core.waiting import Asked, GatewayStopping, ResultSource, Tick, returned, wait_for_end
from gateway.mcp.call import Call, Question
from gateway.mcp.client_form import start_race, stop_race
from gateway.mcp.delivery import after_delivery
from gateway.mcp.texts import (
    OPEN_FAILED_TEXT,
    RESTARTING_TEXT,
    STORE_UNAVAILABLE_TEXT,
    WAIT_FAILED_TEXT,
    progress_message,
    text_result,
    waiting_where,
)
from schemas.errors import HumangateError, StoreUnavailableError
from schemas.models import HumanFunction, Outcome

logger = logging.getLogger(__name__)

ResultOf = Callable[[Outcome, ResultSource], types.CallToolResult]
"""How a tool turns an outcome into its result; the Human Function gives its id and what was asked
(a tool whose result names its questions reads them back from the schema it built)."""


async def open_question(
    call: Call, question: Question, tool: str
) -> tuple[HumanFunction, Opened] | types.CallToolResult:
    """Open (or re-attach to) the Human Function of ``question``; a failure is the tool's result,
    telling the agent to call ``tool`` (the tool it called) again.

    A kept answer handed out here is marked returned as it is handed out (atomically, so that two
    identical calls do not both get it); if this request's response then reaches no client, it is
    kept again for the next identical call (``gateway.mcp.delivery``)."""
    runtime = call.runtime
    try:
        # Shielded: a call cancelled (or, on 2026-07-28, disconnected) mid-open must still learn
        # whether it took a kept answer, to give it back.
        with anyio.CancelScope(shield=True):
            hf, opened = await runtime.service.open(
                call.caller,
                question.channel,
                question.message,
                question.schema,
                timeout=question.timeout,
                idle_timeout=question.idle_timeout,
                other_fields=question.other_fields,
            )
    except StoreUnavailableError as exc:
        logger.warning("could not open a request: %s", exc)
        return text_result(STORE_UNAVAILABLE_TEXT.format(tool=tool), error=True)
    except HumangateError as exc:
        return text_result(str(exc), error=True)
    except Exception:
        logger.exception("opening a request failed")
        return text_result(OPEN_FAILED_TEXT.format(tool=tool), error=True)
    if opened is Opened.CREATED:
        OPENED.labels(channel=hf.channel).inc()
    elif opened is Opened.RETAINED:
        after_delivery(call.ctx, delivered=lambda: None, lost=lambda: runtime.service.returned.release(hf.id))
    return hf, opened


async def ask(call: Call, question: Question, result_of: ResultOf, tool: str) -> types.CallToolResult:
    """Open (or re-attach to) a Human Function and wait for it to end; never raises. ``tool``: the
    tool called, which the texts of a failure or a restart tell the agent to call again.

    While the channel waits, a client that declares form elicitation is asked in its own form too
    (``gateway.mcp.client_form``). A person's answer counts as returned only once the client
    received it (``gateway.mcp.delivery``): otherwise the next identical call gets it."""
    runtime = call.runtime
    opening = await open_question(call, question, tool)
    if isinstance(opening, types.CallToolResult):
        return opening
    hf, opened = opening
    if opened is Opened.RETAINED:
        assert hf.outcome is not None
        return result_of(hf.outcome, hf)
    last_progress = 0.0
    started = runtime.service.clock()
    where = waiting_where(hf, runtime.settings)
    race = start_race(call, hf)
    # The wait keeps only this view of the request, not the whole model (4 KiB a waiting call).
    asked = Asked.of(hf, question.schema, question.other_fields)
    del hf, opening

    async def on_tick(tick: Tick) -> None:
        nonlocal last_progress
        last_progress = max(last_progress + 0.001, round(runtime.service.clock() - started, 3))
        await call.ctx.session.report_progress(
            last_progress, total=tick.timeout, message=progress_message(tick, where)
        )

    try:
        outcome = await wait_for_end(runtime.service, runtime.events, asked, on_tick)
    except GatewayStopping:
        return text_result(RESTARTING_TEXT.format(id=asked.id, tool=tool), error=True)
    except Exception:
        # Never leak internals to the agent; the request stays pending and a re-call re-attaches.
        logger.exception("waiting failed hf=%s channel=%s", asked.id, asked.channel)
        return text_result(WAIT_FAILED_TEXT.format(id=asked.id, tool=tool), error=True)
    finally:
        await stop_race(race)
    after_delivery(call.ctx, delivered=lambda: returned(runtime.service, asked.id, outcome))
    return result_of(outcome, asked)
