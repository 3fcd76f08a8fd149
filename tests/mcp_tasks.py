"""A 2026-07-28 tasks client for the official Python SDK client, as a client extension.

The SDK's ``Client`` resolves an extension's ``resultType`` through a ``ResultClaim``: this one claims
``"task"``, polls ``tasks/get`` at the server's ``pollIntervalMs`` (the protocol's own pacing), shows
each input request to the client's elicitation callback once (as a client shows its form), sends the
answer with ``tasks/update``, and dismisses a form still open when the task ends elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import mcp_types as types
from mcp.client.context import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ElicitationFnT
from pydantic import ConfigDict, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
ANY: Any = TypeAdapter(dict[str, Any])  # the SDK types results as models only; these are plain JSON

Answer = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]


class TaskCreated(types.Result):
    """``CreateTaskResult`` of the tasks extension."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


def request(method: str, task_id: str, **params: Any) -> types.Request[dict[str, Any], str]:
    """A ``tasks/*`` request."""
    return types.Request[dict[str, Any], str](method=method, params={"taskId": task_id, **params})


class TasksClient(ClientExtension):
    """Resolves ``resultType: "task"`` by polling; records what it saw for the tests."""

    identifier = TASKS

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer = answer
        self.created: list[TaskCreated] = []
        self.statuses: list[dict[str, Any]] = []
        self.asked: list[types.ElicitRequestParams] = []
        self.dismissed = 0
        self.on_status: Callable[[], Awaitable[None]] | None = None
        """Called after every ``tasks/get`` (tests wait on what the task said)."""

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.resolve)]

    async def resolve(self, created: TaskCreated, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created)
        seen: set[str] = set()
        form: asyncio.Task[None] | None = None
        try:
            while True:
                task = await ctx.session.send_request(request("tasks/get", created.task_id), ANY)
                self.statuses.append(task)
                if self.on_status is not None:
                    await self.on_status()
                if task["status"] in ("completed", "cancelled", "failed"):
                    if task["status"] == "completed":
                        return types.CallToolResult.model_validate(task["result"], by_name=False)
                    return types.CallToolResult(
                        content=[types.TextContent(type="text", text=f"task {task['status']}")], is_error=True
                    )
                for key, wanted in (task.get("inputRequests") or {}).items():
                    if key not in seen and self.answer is not None:
                        seen.add(key)
                        form = asyncio.create_task(self._show(ctx, created.task_id, key, wanted))
                await asyncio.sleep((task.get("pollIntervalMs") or 100) / 1000)
        finally:
            if form is not None and not form.done():
                self.dismissed += 1
                form.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await form

    async def _show(self, ctx: ClaimContext, task_id: str, key: str, wanted: dict[str, Any]) -> None:
        assert self.answer is not None and wanted["method"] == "elicitation/create"
        params = types.ElicitRequestFormParams.model_validate(wanted["params"], by_name=False)
        self.asked.append(params)
        result = await self.answer(params)
        response = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        await ctx.session.send_request(request("tasks/update", task_id, inputResponses={key: response}), ANY)


def form_callback(answer: Answer) -> ElicitationFnT:
    """An SDK elicitation callback that answers with ``answer`` (a 2025-11-25 client's form)."""

    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        return await answer(params)

    return callback
