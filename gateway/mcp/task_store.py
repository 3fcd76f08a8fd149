"""MCP tasks in Redis (docs/tools.md#tasks).

A task is a handle on one Human Function, bound to the caller that created it. Only what the
function does not already hold is stored: the owner, the tool, when the task was created, and what
the client's own form (2026-07-28 input requests) has done so far. Status and result are always read
from the function, so every gateway process serves every task and a restart loses nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.redis_client import store_operation, text
from schemas.errors import UnknownRequestError
from schemas.models import HumanFunction

TASK_SECRET_BYTES = 24
"""Random bytes in a task id after the function's id (192 bits: task ids are unguessable)."""

MAX_TASK_ID_LENGTH = 200
"""Longest task id looked up at all."""


def new_task_id(hf: HumanFunction) -> str:
    """``<function id>.<secret>``: the function is found from the id, the secret makes it unguessable."""
    return f"{hf.id}.{secrets.token_urlsafe(TASK_SECRET_BYTES)}"


def _key(task_id: str) -> str:
    hf_id, dot, secret = task_id.partition(".")
    if not hf_id or not dot or not secret or len(task_id) > MAX_TASK_ID_LENGTH:
        raise UnknownRequestError("Task not found")
    return keys.task(hf_id, hashlib.sha256(task_id.encode()).hexdigest()[:32])


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as stored."""

    task_id: str
    hf_id: str
    owner: str
    tool: str
    created_at: float
    expires_at: float
    client_form: bool
    """The creating call declared form elicitation: its form is one of the task's input requests."""
    asked: int = 1
    """The number of the client form now outstanding (``form-<asked>``); a new one after an invalid answer."""
    dismissed: bool = False
    """The person dismissed the client's form: the request waits on the channel only."""
    note: str | None = None
    """What was wrong with the client's last answer, said in the next form."""


class TaskStore:
    """Create and read tasks; every key expires with its Human Function."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    @store_operation
    async def create(self, record: TaskRecord) -> None:
        """Store a new task (durable before its id is handed out)."""
        key = _key(record.task_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(
                key,
                mapping={
                    "hf": record.hf_id,
                    "owner": record.owner,
                    "tool": record.tool,
                    "created_at": repr(record.created_at),
                    "expires_at": repr(record.expires_at),
                    "client_form": "1" if record.client_form else "",
                    "asked": str(record.asked),
                },
            )
            pipe.expireat(key, int(record.expires_at) + 1)
            await pipe.execute()

    @store_operation
    async def get(self, task_id: str) -> TaskRecord:
        """The task ``task_id``; ``UnknownRequestError`` if there is none (or it expired away)."""
        data = {text(k): text(v) for k, v in (await self.redis.hgetall(_key(task_id))).items()}
        if not data:
            raise UnknownRequestError("Task not found")
        return TaskRecord(
            task_id=task_id,
            hf_id=data["hf"],
            owner=data["owner"],
            tool=data["tool"],
            created_at=float(data["created_at"]),
            expires_at=float(data["expires_at"]),
            client_form=bool(data.get("client_form")),
            asked=int(data.get("asked", "1")),
            dismissed=bool(data.get("dismissed")),
            note=data.get("note") or None,
        )

    @store_operation
    async def dismiss(self, task_id: str) -> None:
        """The person dismissed the client's form."""
        await self.redis.hset(_key(task_id), "dismissed", "1")

    @store_operation
    async def ask_again(self, record: TaskRecord, note: str) -> bool:
        """Replace the outstanding form ``form-<asked>`` by the next one, which says ``note``; ``False``
        if another answer already did (only one of two racing answers asks again)."""
        key = _key(record.task_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, "asked", 1)
            pipe.hset(key, "note", note)
            asked, _ = await pipe.execute()
        return int(asked) == record.asked + 1
