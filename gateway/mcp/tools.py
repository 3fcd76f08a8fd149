"""The one explicit table of MCP tools. Adding a tool means adding a line here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from gateway.mcp import answering, ask_user_question, elicit, request_human_input, request_user_input
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
    ask_user_question.NAME: ToolEntry(
        ask_user_question.TOOL, ask_user_question.prepare, ask_user_question.result_of
    ),
    request_human_input.NAME: ToolEntry(
        request_human_input.TOOL, request_human_input.prepare, request_human_input.result_of
    ),
    request_user_input.NAME: ToolEntry(request_user_input.TOOL, request_user_input.prepare),
    answering.NAME: ToolEntry(answering.TOOL, answering.answer_request),
}
"""Every tool by name, in the order ``tools/list`` shows them."""
