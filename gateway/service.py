"""The use cases of Human Functions: open one, answer it, expire it, withdraw it.

Every channel's answer passes through ``answer`` and so through the one answer validator; every
ending enqueues the update that shows the outcome on the channel.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from channels.display import AGENT_VIA
from channels.registry import get_channel
from gateway.callers import Caller
from gateway.metrics import ENDED
from gateway.queue import Dispatcher
from gateway.store import HumanFunctionStore
from gateway.validation import validate_answer_off_loop
from schemas.errors import ClosedError, ExpiredError, InvalidRequestError, UnknownRequestError
from schemas.flat import SchemaLimits, check_flat_schema
from schemas.models import STATUS_OF_ACTION, Action, Answer, HumanFunction, Outcome, Status
from schemas.results import WITHDRAWN_REASON, timeout_reason
from schemas.settings import Settings
from schemas.text import utf8_size

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

REAP_BATCH = 100
"""How many overdue Human Functions one reaper pass expires at most."""


def new_id() -> str:
    """A Human Function id: 16 hex characters, not secret (the form token carries the secret)."""
    return secrets.token_hex(8)


def new_form_secret() -> str:
    """The secret half of a form token: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def fingerprint(requester: str, channel: str, message: str, schema: dict[str, Any]) -> str:
    """What makes two calls "identical" for re-attaching (SPEC §6)."""
    canonical = json.dumps([requester, channel, message, schema], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def check_request(message: object, schema: object, settings: Settings) -> tuple[str, dict[str, Any]]:
    """Validate the caller's message and schema; errors name the argument and the rule."""
    if not isinstance(message, str) or not message.strip():
        raise InvalidRequestError("message: must be a non-empty string")
    if utf8_size("message", message) > settings.max_message_bytes:
        raise InvalidRequestError(f"message: must be at most {settings.max_message_bytes} bytes")
    limits = SchemaLimits(settings.max_properties, settings.max_options, settings.max_schema_bytes)
    check_flat_schema(schema, limits)
    assert isinstance(schema, dict)  # check_flat_schema refuses anything else
    return message, schema


class HumanFunctionService:
    """Opens, answers and ends Human Functions; shared by MCP, REST, the web form and webhooks."""

    def __init__(
        self, store: HumanFunctionStore, dispatcher: Dispatcher, settings: Settings, clock: Clock = time.time
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.settings = settings
        self.clock = clock

    async def open(
        self, caller: Caller, channel: str, message: str, schema: dict[str, Any]
    ) -> tuple[HumanFunction, bool]:
        """Create and queue a Human Function, or re-attach to an identical pending one.

        Returns ``(hf, created)``. The arguments must have passed ``check_request``.
        """
        get_channel(channel, self.settings)
        now = self.clock()
        hf = HumanFunction(
            id=new_id(),
            requester=caller.name,
            channel=channel,
            message=message,
            request_schema=schema,
            created_at=now,
            deadline=now + caller.timeout(self.settings),
            form_secret=new_form_secret(),
        )
        hf, created = await self.store.create(hf, fingerprint(caller.name, channel, message, schema))
        if created:
            await self.dispatcher.deliver(hf)
            logger.info("opened hf=%s channel=%s requester=%s", hf.id, channel, caller.name)
        else:
            logger.info("re-attached hf=%s channel=%s requester=%s", hf.id, channel, caller.name)
        return hf, created

    async def answer(self, hf: HumanFunction, answer: Answer) -> HumanFunction:
        """Record a person's answer to ``hf`` if it is the first and valid; otherwise raise and change
        nothing. ``hf`` is the function as the caller loaded it: its schema never changes, and whether
        it is still pending is decided atomically by the store, so it need not be read again."""
        content = None
        if answer.action is Action.ACCEPT:
            content = await validate_answer_off_loop(hf.request_schema, answer.content or {})
        outcome = Outcome(
            status=STATUS_OF_ACTION[answer.action],
            action=answer.action,
            content=content,
            reason=answer.reason,
            by=answer.by,
            via=answer.via,
            at=self.clock(),
        )
        hf = await self._end(hf, outcome)
        if hf.status is Status.EXPIRED:
            raise ExpiredError("this request expired before the answer arrived")
        logger.info(
            "answered hf=%s channel=%s via=%s action=%s", hf.id, hf.channel, answer.via, answer.action
        )
        return hf

    async def withdraw(self, hf_id: str, caller: Caller) -> HumanFunction:
        """The agent cancels its own request (reason ``Request canceled by the agent``)."""
        hf = await self.store.get(hf_id)
        if hf.requester != caller.name:
            raise UnknownRequestError(f"no request with id {hf_id!r} for this caller")
        outcome = Outcome(
            status=Status.CANCELED,
            action=Action.CANCEL,
            reason=WITHDRAWN_REASON,
            by=caller.name,
            via=AGENT_VIA,
            at=self.clock(),
        )
        return await self._end(hf, outcome)

    async def expire(self, hf_id: str) -> HumanFunction:
        """End a Human Function whose deadline passed (raises if it had ended already)."""
        hf = await self.store.get(hf_id)
        return await self._end(hf, self._expired(hf))

    async def reap(self) -> int:
        """Expire every overdue pending Human Function; returns how many this pass ended."""
        ended = 0
        for hf_id in await self.store.due(self.clock(), REAP_BATCH):
            try:
                await self.expire(hf_id)
                ended += 1
            except (UnknownRequestError, ClosedError):
                # Gone, or ended by a process that died before updating the index: a stale entry.
                await self.store.drop_pending(hf_id)
            except Exception:
                logger.exception("reaper failed hf=%s", hf_id)
        return ended

    def _expired(self, hf: HumanFunction) -> Outcome:
        return Outcome(
            status=Status.EXPIRED,
            action=Action.CANCEL,
            reason=timeout_reason(hf.timeout_seconds),
            via="timeout",
            at=self.clock(),
        )

    async def _end(self, hf: HumanFunction, outcome: Outcome) -> HumanFunction:
        ended = await self.store.finish(hf.id, outcome, self._expired(hf))
        ENDED.labels(status=ended.status.value).inc()
        # Only a posted message needs updating. A delivery still in flight has no refs yet; the
        # deliver job re-reads the function after posting and updates the message itself.
        if ended.refs:
            await self.dispatcher.update(ended)
        return ended
