"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gateway.metrics import REGISTRY, WAITING_CALLS
from gateway.runtime import Runtime

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready when Redis answers."""
    runtime: Runtime = request.app.state.runtime
    try:
        await runtime.redis.ping()
    except Exception as exc:
        return JSONResponse({"status": "unavailable", "redis": str(exc)}, status_code=503)
    return JSONResponse({"status": "ok", "redis": "ok"})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    runtime: Runtime = request.app.state.runtime
    WAITING_CALLS.set(runtime.wakeups.waiting)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
