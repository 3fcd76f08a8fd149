"""REST API for callers that do not speak MCP (documented in OpenAPI at ``/docs``).

Every status an operation can return is in its OpenAPI ``responses``, errors with humangate's
``ErrorBody`` (``gateway.errors``); the 201 of a create links to reading and withdrawing the request.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from channels.registry import channel_literal
from gateway.core import audit
from gateway.core.callers import Caller, digest, owns
from gateway.core.links import form_url
from gateway.core.service import check_request
from gateway.core.store import Opened
from gateway.core.waiting import returned
from gateway.errors import error_responses
from gateway.permissions.prompt import decision_of, plan
from gateway.runtime import Runtime
from schemas.errors import InvalidJsonError, UnknownRequestError
from schemas.json_text import read_json
from schemas.models import HumanFunction
from schemas.results import compact_json, is_error, result_text, structured_result


class BoundedJsonRoute(APIRoute):
    """A route whose JSON body is read within bounds (``schemas.json_text``) before FastAPI reads
    it: deep nesting, long numbers, infinities and other encodings are a 422 naming the rule
    (FastAPI's own reading answers them with a bare 400, or takes UTF-16)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def bounded(request: Request) -> Response:
            body = await request.body()
            if body:
                try:
                    read_json(body)
                except InvalidJsonError as exc:
                    error = {"type": "value_error", "loc": ("body",), "msg": exc.rule}
                    raise RequestValidationError([error]) from None
            return await handler(request)

        return bounded


router = APIRouter(prefix="/v1", tags=["requests"], route_class=BoundedJsonRoute)

if TYPE_CHECKING:
    ChannelName = str
else:
    ChannelName = channel_literal()
    """``Literal`` of every registered channel's name (so the OpenAPI lists them as an enum)."""


CREATE_EXAMPLE: dict[str, Any] = {
    "message": "Deploy v2.1 to production?",
    "schema": {
        "type": "object",
        "properties": {
            "approved": {"type": "boolean", "title": "Approve"},
            "reason": {"type": "string", "maxLength": 500},
        },
        "required": ["approved"],
    },
    "uiType": "web",
}
"""A valid request, shown in ``/docs`` and used by API testers as a starting point."""


TOOL_EXAMPLE: dict[str, Any] = {"tool": {"name": "Bash", "input": {"command": "git push origin main"}}}
"""A permission prompt (docs/permissions.md#rest)."""


def _no_default(schema: dict[str, Any]) -> None:
    """A field OpenAPI shows as required: no default and no null there (``None`` is only how a tool
    call leaves it out)."""
    schema.pop("default", None)
    for member in schema.pop("anyOf", []):
        if member.get("type") != "null":
            schema.update(member)


class ToolCall(BaseModel):
    """A tool call a person (or the caller's policy rules) allows or denies (docs/permissions.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=256, description="The tool the agent wants to call")
    input: dict[str, Any] = Field(description="The tool call's input, given back unchanged when allowed")


class CreateRequest(BaseModel):
    """The same arguments as the MCP ``elicit`` tool, or a ``tool`` call to allow or deny (the MCP
    ``approval_prompt`` tool's, docs/permissions.md#rest)."""

    model_config = ConfigDict(
        populate_by_name=True,
        extra="forbid",
        # OpenAPI shows the elicit form, message and schema required; the permission prompt's form
        # (``tool``, docs/permissions.md#rest) is left out of it, so that the fuzz tests of /docs'
        # contract keep reaching the request they create.
        json_schema_extra={"examples": [CREATE_EXAMPLE], "required": ["message", "schema"]},
    )

    # Optional only for a tool call (``tool``), which OpenAPI does not show: there both are required.
    message: str | None = Field(
        None, description="Message explaining what information is needed", json_schema_extra=_no_default
    )
    request_schema: dict[str, Any] | None = Field(
        None,
        alias="schema",
        description="JSON Schema for requested data (flat object only)",
        json_schema_extra=_no_default,
    )
    tool: SkipJsonSchema[ToolCall | None] = Field(
        None, description="A tool call to allow or deny, instead of a message and a schema"
    )
    uiType: ChannelName | None = Field(None, description="UI platform to use")
    policy: str | None = Field(
        None,
        description="The policy to open it under (docs/policies.md); it must apply to the caller. "
        "Left out: the caller's first matching policy, if any",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> CreateRequest:
        if self.tool is not None and (self.message is not None or self.request_schema is not None):
            raise ValueError("give either tool, or message and schema, not both")
        return self

    def missing(self) -> list[dict[str, Any]]:
        """Without ``tool``: the errors of a missing ``message`` or ``schema``, as FastAPI reports a
        missing field (each named, ``is required``)."""
        if self.tool is not None:
            return []
        absent = [
            name
            for name, value in (("message", self.message), ("schema", self.request_schema))
            if value is None
        ]
        return [
            {"type": "missing", "loc": ("body", name), "msg": "Field required", "input": None}
            for name in absent
        ]


class Result(BaseModel):
    text: str
    isError: bool
    structuredContent: dict[str, Any]


class RequestView(BaseModel):
    """A Human Function as its requester sees it."""

    id: str
    status: str
    channel: str
    requester: str
    created_at: float
    deadline: float
    form_url: str
    policy: str | None
    delivery_error: str | None
    result: Result | None


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def current_caller(
    request: Request,
    authorization: Annotated[
        str | None, Header(description="`Bearer <api key>`; without it the caller is anonymous")
    ] = None,
) -> Caller:
    """The authenticated or anonymous caller; 401 for a wrong key."""
    address = request.client.host if request.client is not None else ""
    return await _runtime(request).keyring.identify(authorization, address)


CallerDep = Annotated[Caller, Depends(current_caller)]


def _view(runtime: Runtime, hf: HumanFunction) -> RequestView:
    result = None
    if hf.outcome is not None and hf.tool_call is not None:
        decision = decision_of(hf.tool_call["name"], hf.tool_call["input"], hf.outcome, hf)
        text = compact_json(decision)
        result = Result(text=text, isError=False, structuredContent=decision | {"id": hf.id})
    elif hf.outcome is not None:
        result = Result(
            text=result_text(hf.outcome),
            isError=is_error(hf.outcome),
            structuredContent=structured_result(hf.outcome, hf.id),
        )
    return RequestView(
        id=hf.id,
        status=hf.status.value,
        channel=hf.channel,
        requester=hf.requester,
        created_at=hf.created_at,
        deadline=hf.deadline,
        form_url=form_url(runtime.settings, hf),
        policy=hf.policy,
        delivery_error=hf.delivery_error,
        result=result,
    )


async def _own(runtime: Runtime, hf_id: str, caller: Caller) -> HumanFunction:
    hf = await runtime.store.get(hf_id)
    if not owns(caller, hf):
        raise UnknownRequestError(f"no request with id {hf_id!r} for this caller")
    return hf


CREATED_LINKS = {
    "GetRequest": {"operationId": "get_request", "parameters": {"hf_id": "$response.body#/id"}},
    "WithdrawRequest": {"operationId": "withdraw_request", "parameters": {"hf_id": "$response.body#/id"}},
}
"""OpenAPI links from a created request to reading and withdrawing it."""


@router.post(
    "/requests",
    status_code=201,
    response_model=RequestView,
    operation_id="create_request",
    responses={
        200: {
            "model": RequestView,
            "description": "An identical request was re-attached to, or its kept result handed out",
        },
        201: {"links": CREATED_LINKS},
        **error_responses(401, 403, 413, 422, 429, 503),
    },
)
async def create_request(
    body: CreateRequest, request: Request, response: Response, caller: CallerDep
) -> RequestView:
    """Open a Human Function and return at once (201). An identical request that is pending is
    re-attached to, and one a person answered that no call has returned yet is handed out with
    its result (both 200)."""
    runtime = _runtime(request)
    if missing := body.missing():
        raise RequestValidationError(missing)
    if body.tool is not None:
        return await _open_tool_call(runtime, body, body.tool, response, caller)
    assert body.message is not None and body.request_schema is not None
    message, schema = check_request(body.message, body.request_schema, runtime.settings)
    hf, opened = await runtime.service.open(caller, body.uiType, message, schema, policy=body.policy)
    if opened is not Opened.CREATED:
        response.status_code = 200
    return _view(runtime, hf)


async def _open_tool_call(
    runtime: Runtime, body: CreateRequest, tool: ToolCall, response: Response, caller: Caller
) -> RequestView:
    """A permission prompt: decided at once by the caller's policy rules (the view already holds its
    result, ``status`` ``decided``: there is no request to read again), or opened for a person."""
    prompt = await plan(runtime, caller, tool.name, tool.input, policy=body.policy)
    if prompt.decided is not None:
        now = runtime.service.clock()
        assert prompt.decided_id is not None
        return RequestView(
            id=prompt.decided_id,
            status="decided",
            channel="policy",
            requester=caller.name,
            created_at=now,
            deadline=now,
            form_url="",
            policy=prompt.decided_by,
            delivery_error=None,
            result=Result(
                text=compact_json(prompt.decided),
                isError=False,
                structuredContent=prompt.decided | {"id": prompt.decided_id},
            ),
        )
    question = prompt.question
    assert question is not None
    hf, opened = await runtime.service.open(
        caller,
        body.uiType,
        question.message,
        question.schema,
        other_fields=question.other_fields,
        policy=body.policy,
        tool_call={"name": tool.name, "input": tool.input},
    )
    if opened is not Opened.CREATED:
        response.status_code = 200
    return _view(runtime, hf)


@router.get(
    "/requests/{hf_id}",
    response_model=RequestView,
    operation_id="get_request",
    responses=error_responses(401, 404, 422, 503),
)
async def get_request(hf_id: str, request: Request, caller: CallerDep) -> RequestView:
    """The state of one of your Human Functions, with its result once it ended."""
    runtime = _runtime(request)
    hf = await _own(runtime, hf_id, caller)
    if hf.outcome is not None:
        returned(runtime.service, hf.id, hf.outcome)
    return _view(runtime, hf)


@router.delete(
    "/requests/{hf_id}",
    response_model=RequestView,
    operation_id="withdraw_request",
    responses=error_responses(401, 404, 409, 422, 503),
)
async def withdraw_request(hf_id: str, request: Request, caller: CallerDep) -> RequestView:
    """Withdraw a pending request: it ends as canceled ("Request canceled by the agent")."""
    runtime = _runtime(request)
    await _own(runtime, hf_id, caller)
    return _view(runtime, await runtime.service.withdraw(hf_id, caller))


class AuditEvent(BaseModel):
    """One event of a request's audit trail (docs/audit.md#events): the fields of its kind only."""

    model_config = ConfigDict(extra="allow")

    id: str
    event: str
    at: str
    """When, as ISO 8601 (UTC)."""


class AuditTrail(BaseModel):
    id: str
    events: list[AuditEvent]


@router.get(
    "/requests/{hf_id}/events",
    response_model=AuditTrail,
    operation_id="get_request_events",
    responses=error_responses(401, 404, 422, 503),
)
async def get_request_events(
    hf_id: str,
    request: Request,
    caller: CallerDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> AuditTrail:
    """The audit trail of one of your Human Functions (an operator key reads any), oldest first;
    it outlives the request by ``HUMANGATE_AUDIT_RETENTION`` days."""
    runtime = _runtime(request)
    events = await audit.trail(runtime.redis, hf_id)
    created = next((e for e in events if e.get("event") == "created"), {})
    mine = bool(created.get("caller")) and created.get("caller") == caller.identity
    if not events or not (mine or await _is_operator(runtime, caller, authorization)):
        raise UnknownRequestError(f"no request with id {hf_id!r} for this caller")
    return AuditTrail(id=hf_id, events=[AuditEvent(**audit.shown(hf_id, e)) for e in events])


async def _is_operator(runtime: Runtime, caller: Caller, authorization: str | None) -> bool:
    if not caller.authenticated or authorization is None:
        return False
    key = authorization.strip().partition(" ")[2].strip()
    return await runtime.keyring.operator_name(digest(key)) is not None
