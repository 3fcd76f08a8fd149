"""Human Functions in Redis: create, read, end exactly once, expire what is overdue.

Async (``redis.asyncio``) and free of FastAPI, so the RQ workers use it too. Every change of state
is one Lua script (``gateway.core.store_scripts``; states and transitions in ``docs/state-machine.md``):
the first terminal transition wins, and every ending writes its event to the stream that wakes
waiting calls, in the same atomic step. Every operation is bounded in time, and Redis errors that
mean "unreachable" surface as ``StoreUnavailableError`` (``gateway.core.redis_client.store_operation``).
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from channels.approvers import ALREADY_APPROVED
from gateway.core import redis_keys as keys
from gateway.core import store_scripts as scripts
from gateway.core.audit import DEFAULT_AUDIT, AuditSettings, approved_event, created_event, ended_event
from gateway.core.metrics import TIME_TO_ANSWER_BUCKETS
from gateway.core.queue import Command, flatten
from gateway.core.redis_client import store_operation, text
from gateway.core.replicas import ReplicaWait
from schemas.errors import (
    AlreadyAnsweredError,
    ApprovalRefusedError,
    ExpiredError,
    RateLimitedError,
    UnknownRequestError,
)
from schemas.models import Action, Approval, HumanFunction, Outcome, Status
from schemas.results import TIMED_OUT_REASON, expired_outcome

logger = logging.getLogger(__name__)

REAP_BATCH = 500
"""Most overdue Human Functions one reap script ends (it runs again at once while more are due)."""

KEPT_OVERHEAD_BYTES = 2048
"""Bytes a request keeps in Redis besides its document: its hash's other fields, its attach key,
index entries, delivery job, task and events. Counted against its owner's kept-bytes budget."""


@dataclass(frozen=True, slots=True)
class Limits:
    """How much a new request's owner may open (docs/callers.md#limits); the defaults never refuse."""

    per_minute: int = 1_000_000_000
    """New requests in the last minute."""
    pending: int = 1_000_000_000
    """Requests pending at once."""
    kept_bytes: int = 1 << 60
    """Bytes of requests (and their answers) kept in Redis at once, until their keys expire."""


_BUCKETS = [str(bound) for bound in TIME_TO_ANSWER_BUCKETS]


class Opened(enum.Enum):
    """What ``create`` did with a new request."""

    CREATED = "created"
    """Stored, and its delivery queued."""
    ATTACHED = "attached"
    """An identical request is pending: this call waits on it (nothing new is posted)."""
    RETAINED = "retained"
    """An identical request was answered and no call had returned it: its result is handed out."""


@dataclass(frozen=True, slots=True)
class Reaped:
    """One pass of the reaper: how many index entries were due, how many requests it ended, and
    (id, channel) of those whose messages need updating."""

    due: int
    expired: int
    to_update: list[tuple[str, str]]
    ended: list[str] = field(default_factory=list)
    """The id of each request this pass ended (webhooks and the audit trail announce them)."""


def _doc(hf: HumanFunction) -> str:
    # Defaults left out: a request without "Other" fields stores no empty map.
    return hf.model_dump_json(
        include={
            "id",
            "requester",
            "owner",
            "channel",
            "message",
            "request_schema",
            "created_at",
            "deadline",
            "form_secret",
            "other_fields",
            "policy",
            "target",
            "approvers",
            "approvals_needed",
            "order",
            "on_timeout",
            "steps",
            "remind",
            "mention",
            "tool_call",
        },
        exclude_defaults=True,
    )


class HumanFunctionStore:
    """All reads and writes of Human Functions; every key it writes has a TTL."""

    def __init__(
        self,
        redis: Redis,
        *,
        retention: float = 0.0,
        replicas: ReplicaWait | None = None,
        audit: AuditSettings = DEFAULT_AUDIT,
    ) -> None:
        self.redis = redis
        self.retention = retention
        self.audit = audit
        """How the trails the scripts write are kept (``gateway.core.audit``)."""
        self.replicas = replicas
        """``WAIT`` for replicas after the writes that must survive a failover (``gateway.core.replicas``)."""
        self._create = redis.register_script(scripts.CREATE)
        self._finish = redis.register_script(scripts.FINISH)
        self._reap = redis.register_script(scripts.REAP)
        self._note = redis.register_script(scripts.NOTE)
        self._start = redis.register_script(scripts.START)

    @store_operation
    async def create(
        self,
        hf: HumanFunction,
        fingerprint: str,
        expire_reason: str,
        delivery: list[Command],
        full_expire_reason: str = "",
        limits: Limits = Limits(),
        keep_ended: float = keys.RESULT_GRACE_SECONDS,
    ) -> tuple[HumanFunction, Opened]:
        """Store ``hf`` and queue ``delivery`` in one step, unless an identical request exists (see
        ``Opened``); returns the request the call is about, and what happened. A new request counts
        against its owner's ``limits`` (re-attaching never does); past one, ``RateLimitedError``.

        ``expire_reason`` is why it ends at ``hf.deadline``; with ``hf.full_deadline`` set,
        ``full_expire_reason`` is why it ends at that one, once a person started answering. The
        request is kept ``keep_ended`` seconds after its last deadline (at least the result
        retention, so that a kept answer is never lost), and its bytes count against
        ``limits.kept_bytes`` until then."""
        keep = max(keep_ended, self.retention)
        last = hf.deadline if hf.full_deadline is None else hf.full_deadline
        doc = _doc(hf)
        size = len(doc.encode()) + len(fingerprint) + KEPT_OVERHEAD_BYTES
        args = scripts.CreateArgs(
            id=hf.id,
            doc=doc,
            deadline=repr(hf.deadline),
            fingerprint=fingerprint,
            expire_reason=expire_reason,
            owner=hf.owner,
            hash_expiry_ms=int((last + keep) * 1000),
            attach_expiry_ms=int(hf.deadline * 1000),
            hf_prefix=keys.HF_PREFIX,
            per_minute=limits.per_minute,
            pending=limits.pending,
            now_ms=int(hf.created_at * 1000),
            kept_budget=limits.kept_bytes,
            kept_size=size,
            audit_event=created_event(hf),
            audit_keep_ms=self.audit.keep_ms,
        )
        if hf.full_deadline is not None:
            args["full_deadline"] = repr(hf.full_deadline)
            args["full_expire_reason"] = full_expire_reason
        if hf.counts_approvals:
            args["needed"] = hf.approvals_needed
        if hf.on_timeout == "decline":
            args["expire_action"] = Action.DECLINE.value
        result = await self._replicated(
            "a new request",
            self._create,
            [
                keys.human_function(hf.id),
                keys.attach(fingerprint),
                keys.PENDING,
                keys.rate(hf.owner),
                keys.owned_pending(hf.owner),
                keys.EVENTS,
                keys.kept(hf.owner),
                keys.kept_bytes(hf.owner),
                keys.audit(hf.id),
                keys.AUDIT_INDEX,
            ],
            [scripts.json_argument(args), *flatten(delivery)],
        )
        verdict, fields = result[0], result[1]
        if text(verdict) == "limited":
            which = text(fields)
            limit = {
                "rate": f"at most {limits.per_minute} new requests per minute",
                "pending": f"at most {limits.pending} pending requests",
                "kept": f"at most {size_text(limits.kept_bytes)} of requests kept at once "
                f"(this one keeps {size_text(size)})",
            }[which]
            raise RateLimitedError(which, limit, max(1, int(result[2])))
        opened = Opened(text(verdict))
        if opened is Opened.CREATED:
            return hf, opened
        return _load(_pairs(fields)), opened

    @store_operation
    async def get(self, hf_id: str) -> HumanFunction:
        """The whole Human Function; ``UnknownRequestError`` if there is none (or it expired away)."""
        fields = await self.redis.hgetall(keys.human_function(hf_id))
        if not fields:
            raise UnknownRequestError(f"no request with id {hf_id!r} (it may have expired)")
        return _load(fields)

    @store_operation
    async def attached(self, fingerprint: str) -> str | None:
        """The id of the request an identical call (same caller, channel, message, schema) would
        re-attach to, if any (the inline form app finds its request this way)."""
        hf_id = await self.redis.get(keys.attach(fingerprint))
        return None if hf_id is None else text(hf_id)

    @store_operation
    async def finish(
        self,
        hf_id: str,
        outcome: Outcome,
        update: list[Command],
        *,
        retain: bool,
        replicated: bool = False,
        turns: list[int] | None = None,
        approval: tuple[str, Approval] | None = None,
    ) -> HumanFunction:
        """End a pending function with ``outcome``; an answer or withdrawal at or after its deadline
        ends it as expired instead (``expired_outcome``, with the request's own stored reason).

        ``update`` (the update job) is queued when a message may show the request; ``retain`` keeps
        the result for the next identical call until one returns it. Returns the ended function
        (its status says which outcome won). Raises ``AlreadyAnsweredError`` / ``ExpiredError`` if
        it had ended before, and changes nothing. ``replicated``: return only once the replicas hold
        the ending (a person's answer, ``gateway.core.replicas``).

        Of a request that counts approvals (docs/policies.md#approvals): ``turns`` are the turns the
        person holds (a sequential request; another turn raises ``ApprovalRefusedError`` with its
        ``turn``); ``approval`` is (the person as approvers are named, their approval) of an
        acceptance: recorded once per person, with its ``approved`` audit event (a second one raises
        ``ApprovalRefusedError``), and it ends the request only when it is the last one needed;
        before, the request is returned still pending, with its approvals, and ``update`` is queued
        so that its posts show them.
        """
        args = scripts.FinishArgs(
            id=hf_id,
            status=outcome.status.value,
            outcome=outcome_json(outcome),
            now=repr(outcome.at),
            expired=outcome_json(expired_outcome(TIMED_OUT_REASON, outcome.at)),
            retain_ms=int(self.retention * 1000) if retain else 0,
            attach_prefix=keys.ATTACH_PREFIX,
            events_keep_seconds=keys.EVENTS_KEEP_SECONDS,
            owned_pending_prefix=keys.OWNED_PENDING_PREFIX,
            owned_kept_prefix=keys.KEPT_PREFIX,
            owned_kept_bytes_prefix=keys.KEPT_BYTES_PREFIX,
            audit_event=ended_event(outcome, self.audit.answers),
            audit_keep_ms=self.audit.keep_ms,
            buckets=_BUCKETS,
        )
        if turns is not None:
            args["turns"] = turns
        if approval is not None:
            args["approver"], args["approval"] = approval[0], approval[1].model_dump_json()
            args["approved_event"] = approved_event(approval[0], outcome.via, outcome.at)
        result = await self._replicated(
            "an answer" if replicated else None,
            self._finish,
            [
                keys.human_function(hf_id),
                keys.PENDING,
                keys.EVENTS,
                keys.UNSYNCED,
                keys.audit(hf_id),
                keys.AUDIT_INDEX,
                keys.METRIC_TIMES,
            ],
            [scripts.json_argument(args), *flatten(update)],
        )
        verdict, detail = text(result[0]), result[1]
        if verdict == "missing":
            raise UnknownRequestError(f"no request with id {hf_id!r} (it may have expired)")
        if verdict == "turn":
            raise ApprovalRefusedError("it is not your turn to answer", turn=int(text(detail)))
        if verdict == "repeat":
            raise ApprovalRefusedError(ALREADY_APPROVED)
        if verdict not in ("ok", "approved"):
            raise closed_error(Outcome.model_validate_json(text(detail)))
        return _load(_pairs(detail))

    @store_operation
    async def reap(self, now: float) -> Reaped:
        """Expire up to ``REAP_BATCH`` overdue pending functions in one step."""
        args = scripts.ReapArgs(
            now=repr(now),
            batch=REAP_BATCH,
            expired=outcome_json(expired_outcome(TIMED_OUT_REASON, now)),
            hf_prefix=keys.HF_PREFIX,
            attach_prefix=keys.ATTACH_PREFIX,
            events_keep_seconds=keys.EVENTS_KEEP_SECONDS,
            owned_pending_prefix=keys.OWNED_PENDING_PREFIX,
            audit_prefix=keys.AUDIT_PREFIX,
            audit_keep_ms=self.audit.keep_ms,
            buckets=_BUCKETS,
        )
        due, expired, flat, ended = await self._reap(
            keys=[keys.PENDING, keys.EVENTS, keys.UNSYNCED, keys.AUDIT_INDEX, keys.METRIC_TIMES],
            args=[scripts.json_argument(args)],
        )
        pairs = [(text(i), text(c)) for i, c in zip(flat[::2], flat[1::2], strict=True)]
        return Reaped(int(due), int(expired), pairs, [text(i) for i in ended])

    @store_operation
    async def note_delivery(self, hf_id: str, note: str | None) -> None:
        """Record what went wrong delivering a pending request, or clear it (``None``) at any status:
        a post that was made leaves no stale problem. Its waiting calls hear of it at once."""
        args = scripts.NoteArgs(
            id=hf_id, note=(note or "")[:500], events_keep_seconds=keys.EVENTS_KEEP_SECONDS
        )
        await self._note(keys=[keys.human_function(hf_id), keys.EVENTS], args=[scripts.json_argument(args)])

    @store_operation
    async def set_step_post(self, hf_id: str, index: int, post: str, escalated: str) -> None:
        """Record where step ``index`` posted (``post``: JSON of its channel, target and refs) and
        tell the waiting calls, in their progress, which steps are live (``escalated``)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(keys.human_function(hf_id), step_post_field(index), post)
            pipe.xadd(keys.EVENTS, {"id": hf_id, "escalated": escalated})
            await pipe.execute()

    @store_operation
    async def note_reminded(self, hf_id: str, reminder: str) -> None:
        """A reminder went out: the inbox shows it as a notice (its live updates read the stream)."""
        await self.redis.xadd(keys.EVENTS, {"id": hf_id, "reminded": reminder})

    @store_operation
    async def start(self, hf_id: str) -> bool:
        """A person started answering: a request opened with an idle timeout gets its full deadline
        (its waiting calls hear of it at once). False when there was nothing to extend."""
        args = scripts.StartArgs(
            id=hf_id,
            attach_prefix=keys.ATTACH_PREFIX,
            events_keep_seconds=keys.EVENTS_KEEP_SECONDS,
            owned_pending_prefix=keys.OWNED_PENDING_PREFIX,
        )
        started = await self._start(
            keys=[keys.human_function(hf_id), keys.PENDING, keys.EVENTS], args=[scripts.json_argument(args)]
        )
        return bool(started)

    @store_operation
    async def note_returned(self, returned: list[str], released: list[str]) -> None:
        """Clients received the results of ``returned`` (identical calls now ask again); the kept
        results of ``released`` were handed out but reached no client (the next identical call gets
        them). One round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for hf_id in returned:
                pipe.hset(keys.human_function(hf_id), "returned", "1")
            for hf_id in released:
                pipe.hdel(keys.human_function(hf_id), "returned")
            await pipe.execute()

    @store_operation
    async def set_refs(self, hf_id: str, refs: dict[str, Any]) -> None:
        """Record where a channel posted the request (message ids), for later updates."""
        await self.redis.hset(keys.human_function(hf_id), mapping={"refs": json.dumps(refs)})

    @store_operation
    async def claim_outcome(self, hf_id: str, post: int) -> bool:
        """Claim the sending of ``hf_id``'s outcome to post ``post`` (0: its own, else a step's), for
        a channel that sends it as a new message (email): True the first time only."""
        return bool(await self.redis.hsetnx(keys.human_function(hf_id), outcome_field(post), "1"))

    @store_operation
    async def release_outcome(self, hf_id: str, post: int) -> None:
        """Give back a claim whose sending failed, so that a retry sends the outcome."""
        await self.redis.hdel(keys.human_function(hf_id), outcome_field(post))

    @store_operation
    async def set_refs_if_missing(self, hf_id: str, refs: dict[str, Any]) -> bool:
        """Record references learnt from a platform callback, unless some are recorded already."""
        return bool(await self.redis.hsetnx(keys.human_function(hf_id), "refs", json.dumps(refs)))

    @store_operation
    async def count_delivery_attempt(self, hf_id: str) -> int:
        """Count one more start of the deliver job; returns the count including this one. Counted on
        the replicas too before a post is attempted, so a retry after a failover sees it and looks
        for the earlier post instead of posting again."""
        if self.replicas is None:
            return int(await self.redis.hincrby(keys.human_function(hf_id), "attempts", 1))
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hincrby(keys.human_function(hf_id), "attempts", 1)
            pipe.execute_command(*self.replicas.command())
            count, acked = await pipe.execute()
        self.replicas.acknowledged(int(acked), "a delivery attempt")
        return int(count)

    async def _replicated(
        self, what: str | None, script: AsyncScript, keys: list[str], args: list[Any]
    ) -> Any:
        """Run ``script``, then (for ``what`` that must survive a failover) ``WAIT`` for the replicas
        on the same connection, in one round trip."""
        if what is None or self.replicas is None:
            return await script(keys=keys, args=args)
        for _ in range(2):
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.evalsha(script.sha, len(keys), *keys, *args)
                pipe.execute_command(*self.replicas.command())
                result, acked = await pipe.execute(raise_on_error=False)
            if isinstance(result, NoScriptError):  # a new master (or a restart) without the script yet
                await self.redis.script_load(script.script)
                continue
            if isinstance(result, Exception):
                raise result
            if isinstance(acked, Exception):
                raise acked
            self.replicas.acknowledged(int(acked), what)
            return result
        raise NoScriptError(f"the script for {what} could not be loaded")

    @store_operation
    async def synced(self, hf_id: str) -> None:
        """The channel message shows ``hf_id``'s outcome: nothing left to update."""
        await self.redis.zrem(keys.UNSYNCED, hf_id)

    @store_operation
    async def unsynced_before(self, when: float, limit: int = 100) -> list[tuple[str, str]]:
        """(id, channel) of ended functions whose message was still not updated at ``when``."""
        ids = [text(i) for i in await self.redis.zrangebyscore(keys.UNSYNCED, "-inf", when, 0, limit)]
        found = []
        for hf_id in ids:
            try:
                found.append((hf_id, (await self.get(hf_id)).channel))
            except UnknownRequestError:
                await self.redis.zrem(keys.UNSYNCED, hf_id)
        return found

    @store_operation
    async def states(self, hf_ids: list[str]) -> dict[str, tuple[Status | None, str | None, str | None]]:
        """(status, outcome JSON, delivery note) of each id, in one round trip; status None if gone."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for hf_id in hf_ids:
                pipe.hmget(keys.human_function(hf_id), ["status", "outcome", "delivery_error"])
            rows = await pipe.execute()
        return {
            hf_id: (
                None if status is None else Status(text(status)),
                None if outcome is None else text(outcome),
                None if note is None else text(note),
            )
            for hf_id, (status, outcome, note) in zip(hf_ids, rows, strict=True)
        }

    @store_operation
    async def pending(self, limit: int) -> list[HumanFunction]:
        """Up to ``limit`` pending Human Functions, soonest deadline first (the inbox's list)."""
        ids = await self.redis.zrange(keys.PENDING, 0, limit - 1)
        async with self.redis.pipeline(transaction=False) as pipe:
            for hf_id in ids:
                pipe.hgetall(keys.human_function(text(hf_id)))
            rows = await pipe.execute()
        found = [_load(fields) for fields in rows if fields]
        return [hf for hf in found if hf.is_pending]

    @store_operation
    async def pending_ids(self) -> list[str]:
        """Every pending id, soonest deadline first."""
        return [text(i) for i in await self.redis.zrange(keys.PENDING, 0, -1)]


def size_text(size: int) -> str:
    """Bytes in words: ``16 MiB``, ``61.2 KiB``, ``900 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def outcome_json(outcome: Outcome) -> str:
    """An outcome as the store keeps it: without ``approvals`` (``None`` is never written), which the
    store adds to the ending of a request that counts approvals, in the same step."""
    return outcome.model_dump_json(exclude={"approvals"})


def _pairs(flat: list[Any]) -> dict[Any, Any]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _load(fields: dict[Any, Any]) -> HumanFunction:
    data = {text(k): text(v) for k, v in fields.items()}
    doc: dict[str, Any] = json.loads(data["doc"])
    doc["status"] = data["status"]
    doc["deadline"] = float(data["deadline"])  # the hash's is current: a person starting extends it
    if data.get("full_deadline"):
        doc["full_deadline"] = float(data["full_deadline"])
    if data.get("outcome"):
        doc["outcome"] = json.loads(data["outcome"])
    if data.get("refs"):
        doc["refs"] = json.loads(data["refs"])
    doc["delivery_error"] = data.get("delivery_error")
    doc["delivery_attempts"] = int(data.get("attempts", 0))
    count = int(data.get("approval_count", 0))
    doc["approvals"] = [json.loads(data[f"approval:{n}"]) for n in range(1, count + 1)]
    if doc.get("steps"):
        _load_steps(doc, data)
    return HumanFunction.model_validate(doc)


def _load_steps(doc: dict[str, Any], data: dict[str, str]) -> None:
    """The fired steps (``fired:<i>``, set by the schedule) and their posts (``post:<i>``): a fired
    step's approvers may answer too."""
    fired = sorted(int(k.removeprefix("fired:")) for k in data if k.startswith("fired:"))
    doc["fired"] = fired
    doc["posts"] = {
        int(k.removeprefix("post:")): json.loads(v) for k, v in data.items() if k.startswith("post:")
    }
    approvers: list[str] = list(doc.get("approvers", []))
    for index in fired:
        if index < len(doc["steps"]):
            approvers += [a for a in doc["steps"][index].get("approvers", []) if a not in approvers]
    doc["approvers"] = approvers


def step_post_field(index: int) -> str:
    """The hash field holding where step ``index`` posted (docs/state-machine.md)."""
    return f"post:{index}"


def outcome_field(post: int) -> str:
    """The hash field set once the outcome was sent to post ``post`` (``claim_outcome``)."""
    return f"outcome-sent:{post}"


def step_fired_field(index: int) -> str:
    """The hash field the schedule sets when step ``index`` fires (its time)."""
    return f"fired:{index}"


def closed_error(outcome: Outcome) -> AlreadyAnsweredError | ExpiredError:
    """The error telling someone that a request already ended, and how."""
    if outcome.status is Status.EXPIRED:
        return ExpiredError("this request has expired")
    verb = {Status.ACCEPTED: "answered", Status.DECLINED: "declined", Status.CANCELED: "canceled"}[
        outcome.status
    ]
    return AlreadyAnsweredError(f"already {verb} by {outcome.by or 'someone else'}")
