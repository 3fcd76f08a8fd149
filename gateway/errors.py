"""The one place where errors become HTTP responses, all with humangate's JSON error body.

``{"error": <kind>, "detail": <what is wrong, naming the field and the rule>}``, plus
``violations`` (a refused schema or malformed request, one ``{path, rule}`` each) or ``fields`` (a
refused answer). It is documented in the OpenAPI as ``ErrorBody`` for every status an operation can
return (``error_responses``). FastAPI's own bodies are replaced: a request that fails validation is
a 422 ``InvalidRequestError`` naming each field and rule (not ``{"detail": [{"loc", "msg"}]}``),
and routing errors (404, 405 with an ``Allow`` that lists every method of the path) use it too.
A platform callback refused at the one webhook opening (``gateway.mounts``) gets its body from
``webhook_refusal`` (the same words as plain text for Slack, which shows text), and a body over its
path's limit (``gateway.limits``) from ``too_large_body``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.routing import Match

from gateway.core.redis_client import UNAVAILABLE_ERRORS
from schemas.errors import (
    RETRY_AFTER_SECONDS,
    AuthError,
    ClosedError,
    DeliveryError,
    HumangateError,
    InvalidAnswerError,
    InvalidRequestError,
    InvalidSchemaError,
    NotConfiguredError,
    PolicyRefusedError,
    RateLimitedError,
    SignatureError,
    SignInError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.text import valid_text

STATUS_OF_ERROR: list[tuple[type[HumangateError], int]] = [
    (InvalidSchemaError, 422),
    (InvalidAnswerError, 422),
    (InvalidRequestError, 422),
    (NotConfiguredError, 422),
    (PolicyRefusedError, 403),
    (AuthError, 401),
    (SignatureError, 401),
    (SignInError, 403),
    (UnknownRequestError, 404),
    (ClosedError, 409),
    (DeliveryError, 502),
    (RateLimitedError, 429),
    (StoreUnavailableError, 503),
]
"""HTTP status of each error class; the first match wins, so subclasses come first."""

HTTP_ERROR_NAMES = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed", 413: "RequestTooLarge"}
"""The ``error`` of a response FastAPI or Starlette makes itself (an unknown path, a wrong method)."""


class ViolationBody(BaseModel):
    """One broken rule: ``path`` is the field (dotted; empty for the whole schema or body)."""

    path: str
    rule: str


class ErrorBody(BaseModel):
    """humangate's error body, whatever the status."""

    error: str = Field(description="The kind of error, e.g. InvalidSchemaError, AuthError, NotFound")
    detail: str = Field(description="What is wrong, naming the field and the rule")
    violations: list[ViolationBody] | None = Field(
        None, description="Every broken rule of a refused schema or malformed request"
    )
    fields: dict[str, str] | None = Field(None, description="Why each field of a refused answer is wrong")


ERROR_DESCRIPTIONS = {
    401: "A wrong API key, or none where `HUMANGATE_REQUIRE_AUTH` requires one (`AuthError`)",
    403: "A policy refuses the request: the policy named does not apply to this caller, or the "
    "channel is not one the policy allows (`PolicyRefusedError`)",
    404: "No such request for this caller (`UnknownRequestError`)",
    409: "The request already ended; nothing was changed (`AlreadyAnsweredError`, `ExpiredError`)",
    413: "The body is larger than this path accepts (`RequestTooLarge`)",
    422: "A field breaks a rule: the body, the schema (`InvalidSchemaError`, with `violations`), "
    "the message, the channel or the policy (`InvalidRequestError`, `NotConfiguredError`)",
    429: "Past one of the caller's limits (new requests per minute, pending requests at once); "
    "retry after `Retry-After` seconds (`RateLimitedError`)",
    503: "humangate's store (Redis) cannot be reached right now; retry after `Retry-After` seconds "
    "(`StoreUnavailableError`): the same call is safe to repeat",
}
"""What each error status means on the REST API, for the OpenAPI."""


WEBHOOK_STATUS_OF_ERROR: list[tuple[type[HumangateError], int]] = [
    (NotConfiguredError, 404),
    (SignatureError, 401),
    (InvalidRequestError, 400),
]
"""HTTP status of a platform callback's refusals: a channel not configured on this gateway has no
webhook here (404), a bad signature is a 401, a body the platform never sends a 400."""

PLAIN_PREFIXES = {400: "Bad request: ", 401: "Unauthorized: "}
"""How a plain-text refusal (``webhook_refusal(..., plain=True)``) starts, by status."""


def webhook_refusal(exc: HumangateError, *, plain: bool = False) -> Response:
    """A platform callback refused at the gateway's one webhook opening (``gateway.mounts``):
    humangate's JSON error body, or for a platform that reads plain text (Slack) the same detail as
    text."""
    status = next((code for cls, code in WEBHOOK_STATUS_OF_ERROR if isinstance(exc, cls)), status_of(exc))
    if plain:
        return PlainTextResponse(PLAIN_PREFIXES.get(status, "") + valid_text(str(exc)), status)
    return JSONResponse(error_body(exc), status_code=status, headers=error_headers(exc))


def too_large_body(max_bytes: int) -> dict[str, object]:
    """The JSON error body of a request refused for its size (``gateway.limits``), on every path."""
    return {"error": HTTP_ERROR_NAMES[413], "detail": f"request body: must be at most {max_bytes} bytes"}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of an operation's error statuses, each with ``ErrorBody``."""
    return {status: {"model": ErrorBody, "description": ERROR_DESCRIPTIONS[status]} for status in statuses}


def status_of(exc: HumangateError) -> int:
    for cls, status in STATUS_OF_ERROR:
        if isinstance(exc, cls):
            return status
    return 500


def error_body(exc: HumangateError) -> dict[str, object]:
    body: dict[str, object] = {"error": type(exc).__name__, "detail": valid_text(str(exc))}
    if isinstance(exc, InvalidSchemaError):
        body["violations"] = _violations((v.path, v.rule) for v in exc.violations)
    if isinstance(exc, InvalidAnswerError):
        body["fields"] = {valid_text(k): valid_text(v) for k, v in exc.errors.items()}
    return body


def error_headers(exc: HumangateError) -> dict[str, str] | None:
    if isinstance(exc, AuthError):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, StoreUnavailableError):
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if isinstance(exc, RateLimitedError):
        return {"Retry-After": str(exc.retry_after)}
    return None


def store_unavailable(exc: Exception) -> StoreUnavailableError:
    """A Redis error that escaped the store, as the one error humangate shows for it."""
    return StoreUnavailableError(f"Redis is unavailable ({type(exc).__name__}); retry in a few seconds")


def _violations(pairs: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"path": valid_text(path), "rule": valid_text(rule)} for path, rule in pairs]


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HumangateError)
    return JSONResponse(error_body(exc), status_code=status_of(exc), headers=error_headers(exc))


async def _handle_redis(request: Request, exc: Exception) -> JSONResponse:
    return await _handle(request, store_unavailable(exc))


async def _handle_invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    pairs = [(_field(error["loc"]), _rule(error)) for error in exc.errors()]
    body = {
        "error": "InvalidRequestError",
        "detail": valid_text("; ".join(f"{path}: {rule}" for path, rule in pairs)),
        "violations": _violations(pairs),
    }
    return JSONResponse(body, status_code=422)


async def _handle_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
        # FastAPI's answer to a body that is not UTF-8: a malformed request like any other.
        rule = "must be JSON text in UTF-8"
        body = {"error": "InvalidRequestError", "detail": f"body: {rule}", "violations": [_one("body", rule)]}
        return JSONResponse(body, status_code=422)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    name = HTTP_ERROR_NAMES.get(exc.status_code, f"HTTP{exc.status_code}")
    return JSONResponse(
        {"error": name, "detail": valid_text(str(exc.detail))}, status_code=exc.status_code, headers=headers
    )


def _one(path: str, rule: str) -> dict[str, str]:
    return {"path": path, "rule": rule}


HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
"""The methods a 405's ``Allow`` may list."""


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route of this path takes (Starlette names only the first route's, and a
    path's GET and DELETE are two routes)."""
    routes = request.app.router.routes
    return [
        method
        for method in HTTP_METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    ]


def _field(loc: Iterable[Any]) -> str:
    """A validation error's location as humangate names fields: ``message``, ``header.authorization``."""
    parts = [str(part) for part in loc]
    if parts and parts[0] == "body":
        parts = parts[1:]
        if len(parts) == 1 and parts[0].isdigit():  # a JSON syntax error's position, not a field
            parts = []
    return ".".join(parts) or "body"


def _rule(error: Mapping[str, Any]) -> str:
    """A validation error in humangate's words."""
    kind, ctx = str(error.get("type", "")), error.get("ctx") or {}
    rules = {
        "missing": "is required",
        "extra_forbidden": "is not a field of this request",
        "string_type": "must be a string",
        "dict_type": "must be a JSON object",
        "model_attributes_type": "must be a JSON object",
        "json_invalid": f"is not valid JSON ({ctx.get('error', 'syntax error')})",
        "literal_error": f"must be one of: {ctx.get('expected', '')}",
        "string_too_short": f"must be at least {ctx.get('min_length')} characters",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
    }
    if kind in rules:
        return rules[kind]
    message = str(error.get("msg", "is not valid"))
    return message[:1].lower() + message[1:]


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HumangateError, _handle)
    for error in UNAVAILABLE_ERRORS:
        app.add_exception_handler(error, _handle_redis)
    app.add_exception_handler(RequestValidationError, _handle_invalid_request)
    app.add_exception_handler(HTTPException, _handle_http)
