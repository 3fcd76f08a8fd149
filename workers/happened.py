"""What happens in a job, told once: the request's audit trail (``gateway.core.audit.record``) and
the policy file's webhooks that want it (``request.<event>``, docs/webhooks.md)."""

from __future__ import annotations

import time
from typing import Any

from gateway.core import audit
from schemas.models import HumanFunction
from workers.loop import JobLoop


async def happened(loop: JobLoop, hf: HumanFunction, event: audit.Event, **fields: Any) -> None:
    """``event`` happened to ``hf`` in a job (``posted``, ``escalated``, ``reminded``), with its
    audit fields; neither the trail nor a webhook ever fails the job."""
    await audit.record(loop.store.redis, loop.store.audit, hf.id, event, time.time(), **fields)
    await loop.webhooks.announce(f"request.{event}", hf, fields)
