"""The one place where humangate errors become HTTP responses."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from schemas.errors import (
    AuthError,
    ClosedError,
    DeliveryError,
    HumangateError,
    InvalidAnswerError,
    InvalidRequestError,
    InvalidSchemaError,
    NotConfiguredError,
    SignatureError,
    UnknownRequestError,
)

STATUS_OF_ERROR: list[tuple[type[HumangateError], int]] = [
    (InvalidSchemaError, 422),
    (InvalidAnswerError, 422),
    (InvalidRequestError, 422),
    (NotConfiguredError, 422),
    (AuthError, 401),
    (SignatureError, 401),
    (UnknownRequestError, 404),
    (ClosedError, 409),
    (DeliveryError, 502),
]
"""HTTP status of each error class; the first match wins, so subclasses come first."""


def status_of(exc: HumangateError) -> int:
    for cls, status in STATUS_OF_ERROR:
        if isinstance(exc, cls):
            return status
    return 500


def error_body(exc: HumangateError) -> dict[str, object]:
    body: dict[str, object] = {"error": type(exc).__name__, "detail": str(exc)}
    if isinstance(exc, InvalidSchemaError):
        body["violations"] = [{"path": v.path, "rule": v.rule} for v in exc.violations]
    if isinstance(exc, InvalidAnswerError):
        body["fields"] = exc.errors
    return body


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HumangateError)
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthError) else None
    return JSONResponse(error_body(exc), status_code=status_of(exc), headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HumangateError, _handle)
