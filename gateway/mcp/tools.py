"""The one explicit table of MCP tools. Adding a tool means adding a line here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from gateway.mcp import answering, elicit
from gateway.mcp.asking import Call, Question, ResultOf
from gateway.mcp.texts import outcome_result

Prepare = Callable[[Call, dict[str, Any] | None], Awaitable[Question | types.CallToolResult]]
"""Turns a call's arguments into the question to ask, or into the call's result right away (invalid
arguments, or a tool that asks nobody)."""


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool as ``tools/list`` shows it, what its calls ask, and how an outcome becomes its result."""

    definition: types.Tool
    prepare: Prepare
    result_of: ResultOf = outcome_result

    @property
    def task_support(self) -> bool:
        """Whether a call may run as a task (SPEC §9): the tool declares ``execution.taskSupport``."""
        execution = self.definition.execution
        return execution is not None and execution.task_support in ("optional", "required")


TOOLS: dict[str, ToolEntry] = {
    elicit.NAME: ToolEntry(elicit.TOOL, elicit.prepare),
    answering.NAME: ToolEntry(answering.TOOL, answering.answer_request),
}
"""Every tool by name, in the order ``tools/list`` shows them."""
