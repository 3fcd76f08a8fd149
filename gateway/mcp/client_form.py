"""The calling client's own form, raced against the channel (docs/tools.md#the-clients-own-form).

A client that declares form elicitation is asked too, with the request's message and schema, while
the channel waits. The first valid answer wins wherever it comes from: an answer from the client goes
through ``HumanFunctionService.answer`` like every other (validated, first wins atomically) with
``via="client"``, so the channel's message then says "Answered in the agent's client by <caller>".
A client ``cancel`` (the person dismissed the form) leaves the request waiting on the channel; an
answer outside the schema is asked again with the errors named, as a person would see them.

On 2025-11-25 sessions the question is the SDK's server-to-client ``elicitation/create`` on the call's
own stream. 2026-07-28 has no server-to-client requests: there the form rides a task's input
requests (``gateway.mcp.tasks``), which end the moment the request ends, so no answer ever waits on
a form the client holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from channels.approvers import NOT_AN_APPROVER
from channels.display import CLIENT_VIA
from gateway.core.callers import Caller
from gateway.mcp.call import Call
from gateway.mcp.replies import ReplyRouter
from gateway.runtime import Runtime
from schemas.errors import ClosedError, InvalidAnswerError, NotAnApproverError, StoreUnavailableError
from schemas.models import Action, Answer, HumanFunction

logger = logging.getLogger(__name__)

MAX_CLIENT_ATTEMPTS = 5
"""How many times one call asks the client's form again after answers outside the schema (a client
that fills forms by itself cannot loop forever)."""


def declares_form(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether a client's capabilities include form elicitation (an empty ``elicitation`` object means
    form, as before modes existed)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def races(runtime: Runtime, capabilities: types.ClientCapabilities | None) -> bool:
    """Whether a client with these capabilities is asked in its own form too."""
    return runtime.settings.client_elicitation == "race" and declares_form(capabilities)


def rejection_note(error: InvalidAnswerError) -> str:
    """What the client's form says first when it asks again after an invalid answer."""
    wrong = "; ".join(f"{field or 'form'}: {reason}" for field, reason in error.errors.items())
    return f"Your answer was not accepted ({wrong}). Please answer again."


def retry_message(message: str, error: InvalidAnswerError) -> str:
    """The question asked again after an invalid answer: what was wrong first, then the message."""
    return f"{rejection_note(error)}\n\n{message}"


async def answer_from_client(
    runtime: Runtime,
    caller: Caller,
    hf: HumanFunction,
    action: Action,
    content: dict[str, Any] | None = None,
    reason: str | None = None,
) -> HumanFunction:
    """Record an answer given in the calling client; raises like ``HumanFunctionService.answer``,
    and ``NotAnApproverError`` for a request with approvers (no platform vouches for the client's
    user)."""
    if hf.approvers:
        raise NotAnApproverError(NOT_AN_APPROVER)
    answer = Answer(action=action, content=content, reason=reason, by=caller.name, via=CLIENT_VIA)
    return await runtime.service.answer(hf, answer)


def start_race(call: Call, hf: HumanFunction) -> asyncio.Task[None] | None:
    """Start asking the client's own form (2025-11-25 sessions that declare it), or ``None``."""
    session = call.ctx.session
    if session.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS or not session.can_send_request:
        return None
    if hf.approvers or not races(call.runtime, session.client_capabilities):
        return None  # a request with approvers is answered by them only, never in the agent's client
    return asyncio.create_task(_ask_client(call, hf), name=f"humangate-client-form-{hf.id}")


async def stop_race(race: asyncio.Task[None] | None) -> None:
    """End a race that lost (the SDK then tells the client its form is no longer wanted)."""
    if race is None:
        return
    race.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await race


async def _ask_client(call: Call, hf: HumanFunction) -> None:
    runtime, message = call.runtime, hf.message
    for _ in range(MAX_CLIENT_ATTEMPTS):
        left = hf.seconds_left(runtime.service.clock())
        if left <= 0:
            return
        try:
            async with asyncio.timeout(left), _replies_here(call, left):
                result = await call.ctx.session.elicit_form(
                    message, hf.request_schema, related_request_id=call.ctx.request_id
                )
        except TimeoutError:
            return
        except (MCPError, NoBackChannelError, ValidationError) as exc:
            logger.info("client form unavailable hf=%s channel=%s: %s", hf.id, hf.channel, exc)
            return
        if result.action == "cancel":
            logger.info("client form dismissed hf=%s channel=%s; still waiting", hf.id, hf.channel)
            return
        try:
            await answer_from_client(runtime, call.caller, hf, Action(result.action), result.content)
        except InvalidAnswerError as exc:
            message = retry_message(hf.message, exc)
            continue
        except (ClosedError, StoreUnavailableError) as exc:
            logger.info("client answer not recorded hf=%s channel=%s: %s", hf.id, hf.channel, exc)
        return


def _replies_here(call: Call, seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
    """While asking, have the client's reply carried to this process, whichever one it is posted to
    (``gateway.mcp.replies``)."""
    sessions = call.runtime.sessions
    request = call.ctx.request
    session_id = request.headers.get("mcp-session-id") if request is not None else None
    if sessions is None or sessions.replies is None or not session_id:
        return contextlib.nullcontext()
    router: ReplyRouter = sessions.replies
    return router.expecting(session_id, seconds)
