"""Announcing a Human Function's events to the webhooks of the policy file (docs/webhooks.md).

``announce`` builds the event's body once and queues it for each webhook that wants it, in one
Redis round trip; the workers' senders (``workers.webhook_sender``) sign and send it. It never
fails the request it speaks of: if Redis cannot take the event, that is logged and the request goes
on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis

from gateway.core.outbound import check_url
from gateway.core.webhook_store import WebhookStore, new_event_id
from schemas.models import HumanFunction
from schemas.policies import Policies
from schemas.results import answered_by
from schemas.settings import Settings
from schemas.webhooks import Webhook

logger = logging.getLogger(__name__)


def iso(seconds: float) -> str:
    """A Unix time as ISO 8601 in UTC with milliseconds (``2026-11-29T05:01:02.345Z``)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_data(hf: HumanFunction, answers: bool = True) -> dict[str, Any]:
    """The ``data`` of an event about ``hf``: what was asked and, once ended, how it ended (never
    its form token; the answer's values only with ``answers``, as ``HUMANGATE_AUDIT_ANSWERS``
    says)."""
    data: dict[str, Any] = {
        "id": hf.id,
        "channel": hf.channel,
        "requester": hf.requester,
        "policy": hf.policy,
        "message": hf.message,
        "status": hf.status.value,
        "createdAt": iso(hf.created_at),
        "deadline": iso(hf.deadline),
    }
    if hf.outcome is not None:
        outcome = hf.outcome
        data["outcome"] = {
            "action": outcome.action.value,
            "content": outcome.content if answers else None,
            "reason": outcome.reason,
            "answeredBy": answered_by(outcome),
            "at": iso(outcome.at),
        }
    return data


def event_body(
    event_type: str,
    hf: HumanFunction,
    now: float,
    detail: Mapping[str, Any] | None = None,
    *,
    answers: bool = True,
) -> str:
    """The JSON body of one event (Standard Webhooks' ``type``, ``timestamp``, ``data``); ``detail``,
    the event's own fields as its audit trail has them (who was refused and why, which step posted
    where), is ``data.event``."""
    data = event_data(hf, answers)
    if detail:
        data["event"] = dict(detail)
    body = {"type": event_type, "timestamp": iso(now), "data": data}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


class Webhooks:
    """The webhooks of one gateway process; without any, ``announce`` does nothing."""

    def __init__(
        self,
        redis: Redis | None,
        hooks: tuple[Webhook, ...],
        schedule: list[float],
        clock: Callable[[], float] = time.time,
        *,
        answers: bool = True,
    ) -> None:
        self.hooks = hooks
        self.clock = clock
        self.answers = answers
        """Whether bodies carry answer values (``HUMANGATE_AUDIT_ANSWERS``)."""
        self.store = WebhookStore(redis, schedule) if redis is not None and hooks else None

    async def announce(
        self, event_type: str, hf: HumanFunction, detail: Mapping[str, Any] | None = None
    ) -> None:
        """Queue event ``event_type`` about ``hf`` (with ``detail``, see ``event_body``) for every
        webhook that wants it."""
        urls = [hook.url for hook in self.hooks if hook.wants(event_type)]
        if not urls or self.store is None:
            return
        now = self.clock()
        event_id = new_event_id()
        try:
            await self.store.queue(
                event_id, event_type, event_body(event_type, hf, now, detail, answers=self.answers), urls, now
            )
        except Exception as exc:  # a lost event must not fail the request it is about
            logger.warning(
                "could not queue webhook event %s hf=%s channel=%s: %s", event_type, hf.id, hf.channel, exc
            )

    async def announce_ended(self, ids: list[str], load: Callable[[str], Awaitable[HumanFunction]]) -> None:
        """``request.ended`` of requests ended in bulk (the reaper), each loaded with ``load``."""
        if self.store is None or not any(hook.wants("request.ended") for hook in self.hooks):
            return
        for hf_id in ids:
            try:
                hf = await load(hf_id)
            except Exception as exc:
                logger.warning("could not load hf=%s for its webhook event: %s", hf_id, exc)
                continue
            await self.announce("request.ended", hf)


NO_WEBHOOKS = Webhooks(None, (), [])
"""A process without webhooks."""


def url_mistakes(policies: Policies, settings: Settings) -> tuple[list[tuple[int, str]], list[str]]:
    """(index and reason of each webhook URL refused, warnings) of a file's webhooks (``doctor``)."""
    refused, warnings = url_checks(list(enumerate(hook.url for hook in policies.webhooks)), settings)
    return refused, [f"webhooks[{index}].url: {warning}" for index, warning in warnings]


def url_checks(
    urls: list[tuple[int, str]], settings: Settings
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(index and reason of each URL refused, index and warning of each URL warned about) of the
    webhook URLs ``urls`` (index, URL); every URL is allowed with ``HUMANGATE_WEBHOOK_ALLOW_PRIVATE``."""
    refused: list[tuple[int, str]] = []
    warnings: list[tuple[int, str]] = []
    if settings.webhook_allow_private:
        return refused, warnings
    for index, url in urls:
        reason, warning = check_url(url)
        if reason is not None:
            refused.append((index, reason))
        if warning is not None:
            warnings.append((index, warning))
    return refused, warnings
