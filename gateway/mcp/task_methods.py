"""The ``tasks/*`` requests of both eras, for the caller that created the task and nobody else.

A task id someone else created reads as unknown, exactly like one that never existed, so a task id
says nothing to another caller (``gateway.core.callers.owns``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import Field, ValidationError

from gateway.core.callers import owns
from gateway.core.waiting import Asked, GatewayStopping, returned, wait_for_end
from gateway.mcp.asking import ResultOf
from gateway.mcp.call import Call, Question
from gateway.mcp.client_form import answer_from_client, rejection_note
from gateway.mcp.delivery import after_delivery
from gateway.mcp.task_store import TaskRecord, TaskStore
from gateway.mcp.tasks import FORM_REQUEST, RELATED_TASK_META, Era, TaskView, start_task, task_era, view
from schemas.errors import (
    ClosedError,
    InvalidAnswerError,
    NotAnApproverError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.models import Action, HumanFunction

logger = logging.getLogger(__name__)

NOT_FOUND = "Failed to retrieve task: Task not found"
"""The error of every task id this caller cannot see (unknown, expired, or someone else's)."""

CallOf = Callable[[ServerRequestContext[Any]], Call]


class TaskUpdateParams(types.RequestParams):
    """``tasks/update`` (2026-07-28): answers to a task's outstanding input requests."""

    task_id: str
    input_responses: dict[str, dict[str, Any]] = Field(default_factory=dict)


class TaskMethods:
    """``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/update`` over the task store."""

    def __init__(self, call_of: CallOf, result_of: Callable[[str], ResultOf]) -> None:
        self.call_of = call_of
        self.result_of = result_of

    async def _load(self, call: Call, task_id: str) -> tuple[TaskRecord, HumanFunction]:
        try:
            record = await TaskStore(call.runtime.redis).get(task_id)
            if not owns(call.caller, record):
                raise UnknownRequestError(task_id)
            return record, await call.runtime.store.get(record.hf_id)
        except UnknownRequestError:
            raise MCPError(code=types.INVALID_PARAMS, message=NOT_FOUND) from None
        except StoreUnavailableError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None

    async def _view(self, call: Call, task_id: str) -> TaskView:
        record, hf = await self._load(call, task_id)
        return view(call.runtime, record, hf, self.result_of(record.tool))

    @staticmethod
    def _era(ctx: ServerRequestContext[Any]) -> Era:
        return "2025" if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS else "2026"

    async def get(self, ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> HandlerResult:
        """The task's status now (with its result or input requests on 2026-07-28)."""
        return (await self._view(self.call_of(ctx), params.task_id)).fields(self._era(ctx))

    async def result(
        self, ctx: ServerRequestContext[Any], params: types.GetTaskPayloadRequestParams
    ) -> HandlerResult:
        """2025-11-25 ``tasks/result``: the tool's result, once the request ends (waits until then)."""
        call = self.call_of(ctx)
        record, hf = await self._load(call, params.task_id)
        outcome = hf.outcome
        if hf.is_pending:

            async def quiet(_tick: Any) -> None:
                return None

            try:
                asked = Asked.of(hf, hf.request_schema, hf.other_fields)
                ended = await wait_for_end(call.runtime.service, call.runtime.events, asked, quiet)
            except GatewayStopping:
                raise MCPError(code=types.INTERNAL_ERROR, message="humangate is restarting") from None
            after_delivery(ctx, delivered=lambda: returned(call.runtime.service, hf.id, ended))
            outcome = ended
        assert outcome is not None
        result = self.result_of(record.tool)(outcome, hf)
        meta = {**(result.meta or {}), RELATED_TASK_META: {"taskId": record.task_id}}
        return result.model_copy(update={"meta": meta})

    async def cancel(
        self, ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams
    ) -> HandlerResult:
        """Withdraw the task's request ("Request canceled by the agent" on the channel)."""
        call = self.call_of(ctx)
        _, hf = await self._load(call, params.task_id)
        era = self._era(ctx)
        if not hf.is_pending:
            if era == "2025":
                raise MCPError(code=types.INVALID_PARAMS, message="Cannot cancel a task that has ended")
            return {}
        try:
            await call.runtime.service.withdraw(hf.id, call.caller)
        except ClosedError:
            pass  # it ended an instant ago: the task shows how
        except StoreUnavailableError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        if era == "2026":
            return {}
        return (await self._view(call, params.task_id)).fields(era)

    async def update(self, ctx: ServerRequestContext[Any], params: TaskUpdateParams) -> HandlerResult:
        """2026-07-28: the client's answers to its own form; anything not outstanding is ignored."""
        call = self.call_of(ctx)
        record, hf = await self._load(call, params.task_id)
        response = params.input_responses.get(FORM_REQUEST.format(n=record.asked))
        if response is None or not record.client_form or record.dismissed or not hf.is_pending:
            return {}
        try:
            parsed = types.ElicitResult.model_validate(response, by_name=False)
        except ValidationError:
            raise MCPError(
                code=types.INVALID_PARAMS, message="inputResponses: not an elicitation result"
            ) from None
        store = TaskStore(call.runtime.redis)
        try:
            if parsed.action == "cancel":
                await store.dismiss(record.task_id)
            else:
                await answer_from_client(call.runtime, call.caller, hf, Action(parsed.action), parsed.content)
        except InvalidAnswerError as exc:
            await store.ask_again(record, rejection_note(exc))
        except (ClosedError, NotAnApproverError) as exc:
            logger.info("client answer not recorded hf=%s channel=%s: %s", hf.id, hf.channel, exc)
        except StoreUnavailableError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        return {}


class LegacyTaskCalls:
    """2025-11-25 ``tools/call`` with ``params.task``: answered with ``{"task": ...}`` before the SDK
    would sieve it as a ``CallToolResult`` (a middleware owns its whole result)."""

    def __init__(
        self,
        call_of: CallOf,
        question_of: Callable[
            [Call, types.CallToolRequestParams],
            Awaitable[tuple[Question | types.CallToolResult, ResultOf] | None],
        ],
    ) -> None:
        self.call_of = call_of
        self.question_of = question_of

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        if not isinstance(ctx.params, dict) or ctx.params.get("task") is None:
            return await call_next(ctx)
        try:
            params = types.CallToolRequestParams.model_validate(ctx.params, by_name=False)
        except ValidationError:
            return await call_next(ctx)  # the SDK reports malformed params as it always does
        call = self.call_of(ctx)
        if task_era(call, params) != "2025":
            return await call_next(ctx)
        asked = await self.question_of(call, params)
        if asked is None:
            return await call_next(ctx)  # a tool that runs no tasks answers as usual
        question, result_of = asked
        if not isinstance(question, Question):
            return question.model_dump(by_alias=True, mode="json", exclude_none=True)
        started = await start_task(call, params.name, question, result_of, "2025")
        if isinstance(started, types.CallToolResult):
            return started.model_dump(by_alias=True, mode="json", exclude_none=True)
        created: dict[str, Any] = started
        return created
