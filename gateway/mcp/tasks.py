"""MCP tasks (docs/tools.md#tasks): a call that returns a handle at once, polled until the person answers.

Both protocol eras: a 2025-11-25 client asks for a task with ``params.task`` and gets
``{"task": ...}`` (then ``tasks/get``, ``tasks/result``, ``tasks/cancel``); a 2026-07-28 client that
declares the extension ``io.modelcontextprotocol/tasks`` gets ``resultType: "task"`` (then
``tasks/get``, ``tasks/update``, ``tasks/cancel``). A task is a view of its Human Function
(``gateway.mcp.task_store``): working while it waits, completed with the tool's result once it ends,
cancelled when ``tasks/cancel`` withdrew it. On 2026-07-28 a client that also declares form
elicitation finds the question among the task's input requests: its own form, raced against the
channel (``gateway.mcp.client_form``), which disappears the moment the request ends elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from channels.display import AGENT_VIA, iso_time
from gateway.core.escalation import escalation_text
from gateway.core.waiting import Tick
from gateway.mcp.asking import ResultOf, open_question
from gateway.mcp.call import Call, Question
from gateway.mcp.client_form import races
from gateway.mcp.task_store import TaskRecord, TaskStore, new_task_id
from gateway.mcp.texts import progress_message, waiting_where
from gateway.runtime import Runtime
from schemas.models import HumanFunction
from schemas.results import result_text

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension's identifier."""

RELATED_TASK_META = "io.modelcontextprotocol/related-task"
"""``_meta`` key tying a 2025-11-25 ``tasks/result`` to its task."""

FORM_REQUEST = "form-{n}"
"""Keys of the client-form input requests of a 2026-07-28 task (a new key after an invalid answer)."""

Era = Literal["2025", "2026"]
Status = Literal["working", "input_required", "completed", "cancelled"]


def task_era(call: Call, params: types.CallToolRequestParams) -> Era | None:
    """Whether this ``tools/call`` runs as a task, and in which era's shape."""
    session = call.ctx.session
    if session.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        return "2025" if params.task is not None else None
    capabilities = session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return "2026" if extensions and TASKS_EXTENSION in extensions else None


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task as ``tasks/get`` shows it right now."""

    record: TaskRecord
    hf: HumanFunction
    status: Status
    status_message: str
    updated_at: float
    result: types.CallToolResult | None
    input_requests: dict[str, Any] | None
    poll_ms: int

    def fields(self, era: Era) -> dict[str, Any]:
        """The Task object of the given era (wire names)."""
        ttl = round((self.record.expires_at - self.record.created_at) * 1000)
        poll = self.poll_ms
        data: dict[str, Any] = {
            "taskId": self.record.task_id,
            "status": self.status,
            "statusMessage": self.status_message,
            "createdAt": iso_time(self.record.created_at),
            "lastUpdatedAt": iso_time(self.updated_at),
        }
        if era == "2025":
            data.update(ttl=ttl, pollInterval=poll)
            return data
        data.update(ttlMs=ttl, pollIntervalMs=poll)
        if self.result is not None:
            data["result"] = self.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if self.input_requests:
            data["inputRequests"] = self.input_requests
        return data


def client_form_request(record: TaskRecord, hf: HumanFunction) -> dict[str, Any]:
    """The outstanding ``elicitation/create`` of a task whose client races its own form."""
    message = hf.message if record.note is None else f"{record.note}\n\n{hf.message}"
    return {
        FORM_REQUEST.format(n=record.asked): {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": hf.request_schema},
        }
    }


def view(runtime: Runtime, record: TaskRecord, hf: HumanFunction, result_of: ResultOf) -> TaskView:
    """How the task of ``record`` stands, read from its Human Function ``hf``."""
    outcome = hf.outcome
    poll_ms = round(runtime.settings.poll_interval * 1000)
    if hf.is_pending or outcome is None:
        left = hf.seconds_left(runtime.service.clock())
        message = progress_message(
            Tick(left, hf.delivery_error, hf.full_deadline is not None, escalated=escalation_text(hf)),
            waiting_where(hf, runtime.settings),
        )
        asking = record.client_form and not record.dismissed and runtime.settings.client_elicitation == "race"
        requests = client_form_request(record, hf) if asking else None
        status: Status = "input_required" if requests else "working"
        return TaskView(record, hf, status, message, record.created_at, None, requests, poll_ms)
    result = result_of(outcome, hf)
    ended: Status = "cancelled" if outcome.via == AGENT_VIA else "completed"
    return TaskView(record, hf, ended, result_text(outcome), outcome.at, result, None, poll_ms)


async def start_task(
    call: Call, tool: str, question: Question, result_of: ResultOf, era: Era
) -> dict[str, Any] | types.CallToolResult:
    """Open the question's Human Function and hand back a task at once (or the error result)."""
    runtime = call.runtime
    opening = await open_question(call, question, tool)
    if isinstance(opening, types.CallToolResult):
        return opening
    hf, _ = opening
    settings = runtime.settings  # the task is kept as long as its Human Function
    record = TaskRecord(
        task_id=new_task_id(hf),
        hf_id=hf.id,
        owner=call.caller.identity,
        tool=tool,
        created_at=runtime.service.clock(),
        expires_at=hf.deadline + max(call.caller.keep_ended(settings), settings.result_retention),
        client_form=era == "2026"
        and not hf.approvers  # only its approvers may answer: not the agent's client
        and races(runtime, call.ctx.session.client_capabilities),
    )
    await TaskStore(runtime.redis).create(record)
    fields = view(runtime, record, hf, result_of).fields(era)
    if era == "2025":
        return {"task": fields}
    # The seed state never carries the input requests: the client reads them with tasks/get.
    fields.pop("inputRequests", None)
    fields["status"] = "working" if fields["status"] == "input_required" else fields["status"]
    return {"resultType": "task", **fields}
