"""Words an agent receives that are not a person's answer: failures, restarts, progress."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from gateway.core.links import form_url, inbox_url
from gateway.core.waiting import ResultSource, Tick
from schemas.models import HumanFunction, Outcome
from schemas.results import duration_text, is_error, result_text, structured_result
from schemas.settings import Settings

STORE_UNAVAILABLE_TEXT = (
    "humangate's store (Redis) is unavailable right now, so this request was not opened; call {tool} "
    "again with the same arguments in a few seconds (an identical call never asks the person twice)"
)
"""What the agent sees when Redis cannot be reached as the request is opened (``{tool}``: the tool
it called, as in every text here)."""

OPEN_FAILED_TEXT = (
    "humangate could not open this request because of an internal error (details are in the gateway "
    "log); call {tool} again with the same arguments to retry"
)
"""What the agent sees when opening failed unexpectedly (nothing was opened, or an identical call
re-attaches to what was)."""

WAIT_FAILED_TEXT = (
    "humangate could not finish waiting for request {id} because of an internal error (details are in "
    "the gateway log); the request stays pending: call {tool} again with the same arguments to re-attach"
)
"""What the agent sees when waiting failed unexpectedly; the request exists and stays pending."""

RESTARTING_TEXT = (
    "humangate is restarting, so this call ends here; request {id} stays pending: call {tool} again with "
    "the same arguments to re-attach (the person's answer is kept)"
)
"""What a waiting call returns when its gateway process shuts down."""

STORE_UNREACHABLE_NOTE = (
    "humangate's store is unreachable right now; the request is safe and this call keeps waiting"
)
"""Added to progress messages while the events reader cannot read Redis."""


STARTED_NOTE = "A person started answering, so the request now waits its full time"
"""Added to progress once a person starts answering a request opened with an idle timeout."""

IDLE_NOTE = "It is canceled if nobody starts answering before then"
"""Added to progress while a request opened with an idle timeout waits for someone to start."""


def text_result(text: str, *, error: bool, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    """A tool result of one text (and optional structured content)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def outcome_result(outcome: Outcome, hf: ResultSource) -> types.CallToolResult:
    """``elicit``'s result for an outcome (docs/tools.md#results)."""
    return text_result(
        result_text(outcome), error=is_error(outcome), structured=structured_result(outcome, hf.id)
    )


APPROVERS_ANSWER_ELSEWHERE = (
    "only its approvers may answer, and this gateway has no web sign-in, so not at the form link: they "
    "answer in the inbox at {inbox} or where it is posted"
)
"""Added to where a web request with approvers waits when web sign-in is not configured: its form
link answers nothing (docs/policies.md#approvers), so the agent learns where it can be answered."""


def waiting_where(hf: HumanFunction, settings: Settings) -> str:
    """Where a request waits: ``Waiting for a person on web (Human Function …) at <form link>``, and
    where its approvers answer when that link cannot (``APPROVERS_ANSWER_ELSEWHERE``)."""
    where = f"Waiting for a person on {hf.channel} (Human Function {hf.id})"
    if hf.channel == "web":
        where += f" at {form_url(settings, hf)}"
        if hf.approvers and not settings.oidc_enabled:
            where += "; " + APPROVERS_ANSWER_ELSEWHERE.format(inbox=inbox_url(settings))
    return where


def progress_message(tick: Tick, where: str) -> str:
    """Where the request waits and how long is left, for the agent's progress notifications."""
    text = f"{where}; {duration_text(tick.seconds_left)} left"
    if tick.escalated:  # "...; escalated to teams after 2 minutes; 3 minutes left"
        text = f"{where}; {tick.escalated}; {duration_text(tick.seconds_left)} left"
    if tick.started:
        text += f". {STARTED_NOTE}"
    elif tick.idle:
        text += f". {IDLE_NOTE}"
    if tick.delivery_error:
        text += f". Delivery problem: {tick.delivery_error}"
    if not tick.store_available:
        text += f". {STORE_UNREACHABLE_NOTE}"
    return text
