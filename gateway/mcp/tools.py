"""The one explicit table of MCP tools. Adding a tool means adding a line here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from gateway.mcp import (
    answering,
    approval_prompt,
    ask_user_question,
    elicit,
    request_human_input,
    request_user_input,
    showing,
)
from gateway.mcp.asking import ResultOf
from gateway.mcp.call import Call, Question
from gateway.mcp.texts import outcome_result, text_result
from schemas.errors import HumangateError
from schemas.settings import Settings

Prepare = Callable[[Call, dict[str, Any] | None], Awaitable[Question | types.CallToolResult]]
"""Turns a call's arguments into the question to ask, or into the call's result right away (invalid
arguments, or a tool that asks nobody)."""

Parse = Callable[[dict[str, Any] | None, Settings], Question]
"""Turns a call's arguments into its question; raises ``HumangateError`` naming what is wrong."""


def asking(parse: Parse) -> Prepare:
    """The ``Prepare`` of a tool that asks what ``parse`` reads from its arguments: invalid arguments
    are the call's error result."""

    async def prepare(call: Call, arguments: dict[str, Any] | None) -> Question | types.CallToolResult:
        try:
            return parse(arguments, call.runtime.settings)
        except HumangateError as exc:
            return text_result(str(exc), error=True)

    return prepare


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool as ``tools/list`` shows it, what its calls ask, and how an outcome becomes its result."""

    definition: types.Tool
    prepare: Prepare
    result_of: ResultOf = outcome_result

    @property
    def task_support(self) -> bool:
        """Whether a call may run as a task (docs/tools.md#tasks): the tool declares
        ``execution.taskSupport``."""
        execution = self.definition.execution
        return execution is not None and execution.task_support in ("optional", "required")


TOOLS: dict[str, ToolEntry] = {
    elicit.NAME: ToolEntry(elicit.TOOL, asking(elicit.question_of)),
    ask_user_question.NAME: ToolEntry(
        ask_user_question.TOOL, asking(ask_user_question.parse_arguments), ask_user_question.result_of
    ),
    request_human_input.NAME: ToolEntry(
        request_human_input.TOOL, asking(request_human_input.parse_arguments), request_human_input.result_of
    ),
    request_user_input.NAME: ToolEntry(request_user_input.TOOL, asking(request_user_input.parse_arguments)),
    approval_prompt.NAME: ToolEntry(approval_prompt.TOOL, approval_prompt.prepare),
    answering.NAME: ToolEntry(answering.TOOL, answering.answer_request),
    showing.NAME: ToolEntry(showing.TOOL, showing.show_message),
}
"""Every tool by name, in the order ``tools/list`` shows them."""
