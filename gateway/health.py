"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import asyncio
import logging

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gateway.core import redis_check
from gateway.core.metrics import REGISTRY, WAITING_CALLS, shared_metrics
from gateway.core.redis_client import OPERATION_DEADLINE
from gateway.runtime import Runtime
from schemas.errors import RETRY_AFTER_SECONDS, StoreUnavailableError

logger = logging.getLogger(__name__)

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready when Redis answers and is safe to keep answers in (it never evicts keys)."""
    runtime: Runtime = request.app.state.runtime
    try:
        async with asyncio.timeout(OPERATION_DEADLINE):
            unsafe = await redis_check.unsafe_reason(runtime.redis)
    except Exception as exc:
        return JSONResponse(
            {"status": "unavailable", "redis": f"unreachable: {type(exc).__name__}: {exc}"},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    if unsafe:
        return JSONResponse({"status": "unsafe", "redis": unsafe}, status_code=503)
    return JSONResponse({"status": "ok", "redis": "ok"})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    WAITING_CALLS.set(runtime.events.waiting)
    try:
        shared = await shared_metrics(runtime.redis)
    except StoreUnavailableError as exc:  # this process's own metrics still help diagnose that
        logger.warning("metrics: the shared counters cannot be read: %s", exc)
        shared = b""
    return Response(generate_latest(REGISTRY) + shared, media_type=CONTENT_TYPE_LATEST)
