"""The audit trail of every Human Function: what happened to it, who did it, where and when.

One Redis list per request (``redis_keys.audit``), appended only, one compact JSON object per event
(``{"event": "posted", "at": <seconds since epoch>, ...}``), kept ``HUMANGATE_AUDIT_RETENTION`` days
after its last event; a sorted set (``redis_keys.AUDIT_INDEX``) finds the trails of a time range.
``created``, ``approved`` and ``ended`` are written by the store's scripts in the same atomic step as
the change (``gateway.core.store_scripts``); every other event goes through ``record``, the one door. The
fields of each event are listed in ``FIELDS`` (and docs/audit.md): nothing else gets in, so never a
secret, a key or a form token.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from redis.asyncio import Redis

from channels.approvers import FORM_LINK, FORM_VIA, person_name
from gateway.core import metrics
from gateway.core import redis_keys as keys
from gateway.core import store_scripts as scripts
from gateway.core.redis_client import store_operation, text
from schemas.errors import StoreUnavailableError
from schemas.models import HumanFunction, Outcome, Person
from schemas.results import EXPIRED_VIA
from schemas.settings import Settings

logger = logging.getLogger(__name__)

Event = Literal[
    "created", "posted", "reminded", "escalated", "opened", "refused", "approved", "ended", "decided"
]

FIELDS: dict[str, tuple[str, ...]] = {
    "created": ("caller", "policy", "channels", "target"),
    "posted": ("channel", "target", "step"),
    "reminded": ("channel", "target", "step"),
    "escalated": ("channel", "target", "step"),
    "opened": ("who", "where"),
    "refused": ("who", "where", "why"),
    "approved": ("who", "where", "count", "of"),
    "ended": ("outcome", "who", "name", "where", "reason", "answer"),
    "decided": ("caller", "policy", "tool", "behavior", "rule"),
}
"""The fields each event may carry besides ``event`` and ``at``; ``record`` refuses any other."""

Why = Literal["not_approver", "not_your_turn", "already_approved", "invalid_answer", "already_ended"]
"""Why an answer was refused (the ``why`` of ``refused``, the ``reason`` of its metric)."""

DAY_SECONDS = 86_400
MAX_EVENTS = 32
"""Most events ``record`` appends to one trail (its ``ended`` always gets in)."""

MAX_NOISY_EVENTS = 16
"""Most events a trail holds for ``record`` to append one of ``NOISY`` more: people clicking on and
on fill at most this much, and the gateway's own events (posts, escalations, approvals) still fit."""

NOISY = frozenset({"opened", "refused"})
"""The events anyone who sees a request can cause again and again."""

EXPORT_BATCH = 200
"""Trails one export round trip reads."""


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """How long trails are kept and whether they keep answers (``HUMANGATE_AUDIT_*``)."""

    retention_days: float = 90.0
    answers: bool = True

    @property
    def keep_ms(self) -> int:
        """How long a trail lives after its last event, in ms."""
        return int(self.retention_days * DAY_SECONDS * 1000)


DEFAULT_AUDIT = AuditSettings()
"""The settings' defaults: 90 days, answers kept."""


def audit_settings(settings: Settings) -> AuditSettings:
    """How these settings keep trails."""
    return AuditSettings(settings.audit_retention, settings.audit_answers)


def event_json(event: str, at: float, fields: Mapping[str, Any]) -> str:
    """One stored event: compact JSON, ``event`` and ``at`` first, fields without a value left out."""
    allowed = FIELDS[event]
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise ValueError(f"audit event {event!r}: unknown field(s) {', '.join(unknown)}; allowed: {allowed}")
    body: dict[str, Any] = {"event": event, "at": round(at, 3)}
    body.update((name, fields[name]) for name in allowed if fields.get(name) is not None)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def who_of(person: Person | None, by: str | None, where: str | None = None) -> str | None:
    """Who acted, as policies name people (``slack:U1``, ``discord:user:1``, ``email:ada@example.com``,
    ``operator:alice``); when no platform vouches for anyone, ``form link`` on the web form (its link
    names no one), else ``by`` (the channel's words: the client's caller, the agent)."""
    if person is None:
        return FORM_LINK if where == FORM_VIA else by
    return person_name(person.channel, person.id)


def created_event(hf: HumanFunction) -> str:
    """The ``created`` event of ``hf`` (written by the store's create script)."""
    return event_json(
        "created",
        hf.created_at,
        {"caller": hf.owner, "policy": hf.policy, "channels": [hf.channel], "target": hf.target},
    )


def approved_event(who: str, where: str, at: float) -> str:
    """The ``approved`` event of ``who``'s acceptance ``where`` at ``at``, without ``count`` and
    ``of``: the store's finish script adds them as it records the approval, in the same step (so
    the last approval comes before the ``ended`` it brings)."""
    return event_json("approved", at, {"who": who, "where": where})


def ended_event(outcome: Outcome, answers: bool) -> str:
    """The ``ended`` event of ``outcome`` (written by the store's finish script; the script writes
    its own when the deadline has passed under it). ``answers``: keep the answer's values."""
    person = outcome.person
    return event_json(
        "ended",
        outcome.at,
        {
            "outcome": outcome.status.value,
            "who": who_of(person, outcome.by, outcome.via),
            "name": person.name if person is not None else None,
            "where": None if outcome.via == EXPIRED_VIA else outcome.via,
            "reason": outcome.reason,
            "answer": outcome.content if answers else None,
        },
    )


async def record(
    redis: Redis, kept: AuditSettings, hf_id: str, event: Event, at: float, **fields: Any
) -> None:
    """Append one event to ``hf_id``'s trail: the one way every Python-side event is written.

    ``fields`` are the event's own (``FIELDS``). A ``refused`` event also counts
    ``humangate_refused_answers_total{reason=why}``, an ``escalated`` one
    ``humangate_escalations_total``. A trail takes at most ``MAX_EVENTS`` events this way, and
    ``NOISY`` ones only while it holds fewer than ``MAX_NOISY_EVENTS`` (its ``ended`` always gets
    in). Best effort: when Redis cannot be reached the event is logged and
    lost, and the person's action goes on (it is refused or fails on its own)."""
    counter = ""
    if event == "refused":
        counter = metrics.counter_field(metrics.REFUSED_ANSWERS, str(fields.get("why") or ""))
    elif event == "escalated":
        counter = metrics.counter_field(metrics.ESCALATIONS)
    args = scripts.RecordArgs(
        id=hf_id,
        event=event_json(event, at, fields),
        at=at,
        keep_ms=kept.keep_ms,
        max_events=MAX_NOISY_EVENTS if event in NOISY else MAX_EVENTS,
        counter=counter,
    )
    try:
        if not await _append(redis, args):
            logger.warning("audit trail full hf=%s: event %s not kept", hf_id, event)
    except StoreUnavailableError as exc:
        logger.warning("audit event lost hf=%s event=%s: %s", hf_id, event, exc)


@store_operation
async def _append(redis: Redis, args: scripts.RecordArgs) -> bool:
    script = redis.register_script(scripts.RECORD)  # EVALSHA, loaded on first use
    appended = await script(
        keys=[keys.audit(args["id"]), keys.AUDIT_INDEX, keys.METRIC_COUNTS],
        args=[scripts.json_argument(args)],
    )
    return bool(appended)


@store_operation
async def trail(redis: Redis, hf_id: str) -> list[dict[str, Any]]:
    """Every event of ``hf_id``, oldest first, as stored (``at`` in seconds since epoch)."""
    return [json.loads(text(entry)) for entry in await redis.lrange(keys.audit(hf_id), 0, -1)]


def iso(at: float) -> str:
    """``2026-11-29T04:40:22.123Z``: an event's time as ISO 8601, UTC, to the millisecond."""
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def details(event: Mapping[str, Any]) -> str:
    """An event's fields in words, for a page (``who: slack:U1 · where: slack``; no answer values)."""
    return " · ".join(
        f"{name}: {', '.join(map(str, value)) if isinstance(value, list) else value}"
        for name, value in event.items()
        if name not in ("event", "at", "answer")
    )


def shown(hf_id: str, event: Mapping[str, Any]) -> dict[str, Any]:
    """An event as the endpoint and the export give it: its request's id, its kind, ``at`` as ISO
    8601, then its fields in the order of ``FIELDS`` (whichever script or process wrote it)."""
    kind = str(event["event"])
    order = FIELDS.get(kind, ())
    body = {"id": hf_id, "event": kind, "at": iso(float(event["at"]))}
    body.update((name, event[name]) for name in order if name in event)
    body.update((name, value) for name, value in event.items() if name not in body and name not in order)
    return body


async def export(redis: Redis, since: float | None, until: float | None) -> AsyncIterator[dict[str, Any]]:
    """Every event from ``since`` to ``until`` (seconds since epoch, both included; ``None``: no
    bound), trail by trail in the order their last events came, each trail oldest first."""
    low = "-inf" if since is None else repr(since)
    start = 0
    while True:
        ids = [text(i) for i in await _ids(redis, low, start)]
        if not ids:
            return
        start += len(ids)
        trails = await _trails(redis, ids)
        for hf_id, entries in zip(ids, trails, strict=True):
            for entry in entries:
                event = json.loads(text(entry))
                at = float(event["at"])
                if (since is None or at >= since) and (until is None or at <= until):
                    yield shown(hf_id, event)


@store_operation
async def _ids(redis: Redis, low: str, start: int) -> list[Any]:
    # A trail whose last event is before ``since`` has nothing in the range.
    return list(await redis.zrangebyscore(keys.AUDIT_INDEX, low, "+inf", start, EXPORT_BATCH))


@store_operation
async def _trails(redis: Redis, ids: list[str]) -> list[list[Any]]:
    async with redis.pipeline(transaction=False) as pipe:
        for hf_id in ids:
            pipe.lrange(keys.audit(hf_id), 0, -1)
        return list(await pipe.execute())
