"""The one place where humangate errors become HTTP responses."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from gateway.redis_client import UNAVAILABLE_ERRORS
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
    StoreUnavailableError,
    UnknownRequestError,
)

RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of a 503 while Redis is unavailable (a restart usually takes about this long)."""

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
    (StoreUnavailableError, 503),
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


def error_headers(exc: HumangateError) -> dict[str, str] | None:
    if isinstance(exc, AuthError):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, StoreUnavailableError):
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}
    return None


def store_unavailable(exc: Exception) -> StoreUnavailableError:
    """A Redis error that escaped the store, as the one error humangate shows for it."""
    return StoreUnavailableError(f"Redis is unavailable ({type(exc).__name__}); retry in a few seconds")


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HumangateError)
    return JSONResponse(error_body(exc), status_code=status_of(exc), headers=error_headers(exc))


async def _handle_redis(request: Request, exc: Exception) -> JSONResponse:
    return await _handle(request, store_unavailable(exc))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HumangateError, _handle)
    for error in UNAVAILABLE_ERRORS:
        app.add_exception_handler(error, _handle_redis)
