"""One tool call and what it asks: the values every asking tool hands to ``gateway.mcp.asking``
(kept apart so that the client's form, which the asking flow starts, can name a call without
importing the flow back)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from gateway.core.callers import Caller
from gateway.runtime import Runtime
from schemas.models import Outcome


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call: the process's runtime, who calls, and the SDK's request context."""

    runtime: Runtime
    caller: Caller
    ctx: ServerRequestContext[Any]


@dataclass(frozen=True, slots=True)
class Question:
    """What a tool asks: on which channel (``None``: the default one), the message, and the flat
    schema (already checked)."""

    channel: str | None
    message: str
    schema: dict[str, Any]
    timeout: float | None = None
    """Seconds to wait if shorter than the caller's timeout (never longer)."""
    idle_timeout: float | None = None
    """Seconds to wait unless a person starts answering (then the full timeout)."""
    other_fields: dict[str, str] = field(default_factory=dict)
    """Select property -> its "Other" free-text property (``schemas.other_fields``)."""
    result_of: Callable[[Outcome, Any], types.CallToolResult] | None = None
    """How this call's outcome becomes its result, in place of its tool's (a call whose result holds
    its own arguments: ``approval_prompt`` gives the agent its input back)."""
