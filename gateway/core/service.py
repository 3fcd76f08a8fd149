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
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from channels.approvers import NOT_AN_APPROVER, NOT_YOUR_TURN, person_name, turns_held
from channels.display import AGENT_VIA
from channels.registry import CHANNELS, get_channel
from gateway.core import audit
from gateway.core.callers import Caller, owns
from gateway.core.escalation import planned_steps, schedule_commands, update_channel
from gateway.core.metrics import ENDED, LIMITED
from gateway.core.policies import apply_policy
from gateway.core.queue import JobRecorder
from gateway.core.returned import ReturnedMarks
from gateway.core.store import REAP_BATCH, HumanFunctionStore, Limits, Opened, Reaped
from gateway.core.validation import validate_answer_off_loop
from gateway.core.webhooks import NO_WEBHOOKS, Webhooks
from schemas.errors import (
    ApprovalRefusedError,
    ClosedError,
    ExpiredError,
    InvalidAnswerError,
    InvalidRequestError,
    NotAnApproverError,
    RateLimitedError,
    StoreUnavailableError,
    UnknownRequestError,
)
from schemas.flat import SchemaLimits, check_flat_schema
from schemas.models import STATUS_OF_ACTION, Action, Answer, Approval, HumanFunction, Outcome, Status
from schemas.other_fields import check_other_fields, check_pairs
from schemas.policies import Policies
from schemas.results import WITHDRAWN_REASON, Expiring, answered_by, ending_reason, expired_outcome
from schemas.settings import Settings
from schemas.text import utf8_size

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

NO_POLICIES = Policies()
"""An installation without a policy file."""


def new_id() -> str:
    """A Human Function id: 16 hex characters, not secret (the form token carries the secret)."""
    return secrets.token_hex(8)


def new_form_secret() -> str:
    """The secret half of a form token: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def fingerprint(
    owner: str,
    channel: str,
    message: str,
    schema: dict[str, Any],
    other_fields: Mapping[str, str] | None = None,
    policy: str | None = None,
) -> str:
    """What makes two calls "identical" for re-attaching (docs/human-functions.md): the same caller identity,
    channel, message and schema (and the Other pairs of a tool that has them, and the policy)."""
    parts: list[Any] = [owner, channel, message, schema]
    if other_fields:  # only then, so the fingerprints of every other request stay as they were
        parts.append(dict(other_fields))
    if policy is not None:
        parts.append({"policy": policy})
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"))
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
        self,
        store: HumanFunctionStore,
        jobs: JobRecorder,
        settings: Settings,
        clock: Clock = time.time,
        policies: Policies = NO_POLICIES,
        webhooks: Webhooks = NO_WEBHOOKS,
    ) -> None:
        self.store = store
        self.jobs = jobs
        self.settings = settings
        self.clock = clock
        self.policies = policies
        """The installation's policies (``gateway.core.policies.load_policies``); none by default."""
        self.webhooks = webhooks
        """Where events go (``gateway.core.webhooks``, docs/webhooks.md); nowhere by default."""
        self.returned = ReturnedMarks(store)
        """Results calls returned, written down in the background (``gateway.core.returned``)."""

    async def open(
        self,
        caller: Caller,
        channel: str | None,
        message: str,
        schema: dict[str, Any],
        *,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        other_fields: Mapping[str, str] | None = None,
        policy: str | None = None,
        tool_call: dict[str, Any] | None = None,
    ) -> tuple[HumanFunction, Opened]:
        """Create and queue a Human Function in one step, or re-attach to an identical pending one,
        or hand out the kept result of an identical answered one (docs/human-functions.md#re-attaching).

        ``timeout`` may shorten the caller's timeout, never lengthen it. With ``idle_timeout``, the
        request ends that soon unless a person starts answering (``started``), which gives it the
        full timeout. ``other_fields`` pairs selects with their "Other" text
        (``schemas.other_fields``). The arguments must have passed ``check_request``.

        ``channel`` ``None`` is the default channel. The caller's policy (``policy`` names one, else
        its first matching one) sets the timeout, allowed channels, target and limits in place of
        the caller's (docs/policies.md#applying).
        """
        applied = apply_policy(self.policies, caller, channel, self.settings, policy)
        channel = applied.channel
        platform = get_channel(channel, self.settings)
        if other_fields:
            check_pairs(schema, other_fields)
        now = self.clock()
        full = applied.timeout if timeout is None else min(timeout, applied.timeout)
        policy_name = applied.policy.name if applied.policy is not None else None
        idle = idle_timeout if idle_timeout is not None and idle_timeout < full else None
        hf = HumanFunction(
            id=new_id(),
            requester=caller.name,
            owner=caller.identity,
            channel=channel,
            message=message,
            request_schema=schema,
            created_at=now,
            deadline=now + (full if idle is None else idle),
            full_deadline=None if idle is None else now + full,
            form_secret=new_form_secret(),
            other_fields=dict(other_fields or {}),
            policy=policy_name,
            tool_call=tool_call,
            target=applied.target,
            approvers=list(applied.policy.approvers) if applied.policy is not None else [],
            approvals_needed=applied.policy.approvals if applied.policy is not None else 1,
            order=applied.policy.order if applied.policy is not None else "any",
            on_timeout=applied.policy.on_timeout if applied.policy is not None else "cancel",
            steps=planned_steps(applied.policy, channel, applied.target),
            remind=list(applied.policy.remind) if applied.policy is not None else [],
            mention=list(applied.policy.steps[0].mention)
            if applied.policy is not None
            and applied.policy.steps
            and applied.policy.steps[0].channel == channel
            else [],
        )
        delivery = self.jobs.delivery(hf, now) if platform.posts else []
        delivery += schedule_commands(hf)  # its steps and reminders (docs/escalation.md)
        try:
            hf, opened = await self.store.create(
                hf,
                fingerprint(caller.identity, channel, message, schema, other_fields, policy_name),
                ending_reason(hf, hf.timeout_seconds),
                delivery,
                full_expire_reason=ending_reason(hf, full),
                limits=Limits(
                    applied.rate_limit,
                    applied.max_pending,
                    caller.max_kept_bytes(self.settings),
                ),
                keep_ended=caller.keep_ended(self.settings),
            )
        except RateLimitedError as exc:
            LIMITED.labels(limit=exc.which).inc()
            logger.info("refused a new request channel=%s requester=%s: %s", channel, caller.name, exc.limit)
            raise
        logger.info(
            "%s hf=%s channel=%s requester=%s policy=%s",
            opened.value,
            hf.id,
            channel,
            caller.name,
            policy_name or "-",
        )
        if opened is Opened.CREATED:
            await self.webhooks.announce("request.created", hf)
        return hf, opened

    def attach_key(self, caller: Caller, channel: str | None, message: str, schema: dict[str, Any]) -> str:
        """The fingerprint ``open`` gives a request of these arguments (without Other pairs), so
        that its call can be found again (the inline form app's ``answer_request``)."""
        applied = apply_policy(self.policies, caller, channel, self.settings)
        name = applied.policy.name if applied.policy is not None else None
        return fingerprint(caller.identity, applied.channel, message, schema, policy=name)

    async def answer(self, hf: HumanFunction, answer: Answer) -> HumanFunction:
        """Record a person's answer to ``hf`` if it is the first and valid; otherwise raise and change
        nothing. ``hf`` is the function as the caller loaded it: its schema never changes, and whether
        it is still pending is decided atomically by the store, so it need not be read again."""
        content = None
        if answer.action is Action.ACCEPT:
            try:
                content = await validate_answer_off_loop(hf.request_schema, answer.content or {})
                check_other_fields(hf.other_fields, content)
            except InvalidAnswerError:
                await self._refused(hf, answer, "invalid_answer")
                raise
        if hf.counts_approvals:
            return await self._approve(hf, answer, content)
        hf = await self._end_answer(hf, answer, outcome_of(answer, content, self.clock()))
        logger.info(
            "answered hf=%s channel=%s via=%s action=%s by=%s",
            hf.id,
            hf.channel,
            answer.via,
            answer.action,
            audit.who_of(answer.person, answer.via, answer.via),
        )
        return hf

    async def _approve(
        self, hf: HumanFunction, answer: Answer, content: dict[str, Any] | None
    ) -> HumanFunction:
        """``answer`` to a request that counts approvals (docs/policies.md#approvals): an acceptance
        is recorded once per person and ends it only when it is the last one needed; a decline (or
        cancel) ends it at once; in a sequential request only the approver whose turn it is may
        answer. An answer no platform attributes to a person never counts."""
        person = answer.person
        if person is None:
            await self._refused(hf, answer, "not_approver")
            raise NotAnApproverError(NOT_AN_APPROVER)
        who = person_name(person.channel, person.id)  # one person however many places they answer in
        now = self.clock()
        outcome = outcome_of(answer, content, now)
        approval = None
        if answer.action is Action.ACCEPT:
            approval = Approval(by=answered_by(outcome) or {}, at=now, content=content)
        turns = turns_held(hf, answer.held) if hf.order == "sequential" else None
        try:
            after = await self._end_answer(
                hf, answer, outcome, turns=turns, approval=None if approval is None else (who, approval)
            )
        except ApprovalRefusedError as exc:
            logger.info("refused an answer hf=%s channel=%s by=%s: %s", hf.id, hf.channel, who, exc)
            await self._refused(hf, answer, "not_your_turn" if exc.turn is not None else "already_approved")
            if exc.turn is not None and exc.turn < len(hf.approvers):
                raise ApprovalRefusedError(
                    NOT_YOUR_TURN.format(turn=hf.approvers[exc.turn]), exc.turn
                ) from None
            raise
        logger.info(
            "answered hf=%s channel=%s via=%s action=%s by=%s approvals=%d/%d",
            hf.id,
            hf.channel,
            answer.via,
            answer.action,
            who,
            len(after.approvals),
            hf.approvals_needed,
        )
        return after

    async def _approved(self, hf: HumanFunction, who: str, where: str) -> None:
        """One approval of a request needing several was recorded (``hf`` as it is now: still
        pending, or accepted when this was the last one needed): the ``request.approved`` webhooks
        hear of it here, before the ``request.ended`` of the approval that ends it. (Its audit event
        was written by the store's script, in the same step, before the ``ended`` one.)"""
        detail = {"who": who, "where": where, "count": len(hf.approvals), "of": hf.approvals_needed}
        await self.webhooks.announce("request.approved", hf, detail)
        logger.info(
            "approved hf=%s channel=%s by=%s (%d of %d)",
            hf.id,
            hf.channel,
            who,
            len(hf.approvals),
            hf.approvals_needed,
        )

    async def started(self, hf: HumanFunction) -> HumanFunction:
        """A person started answering ``hf`` (opened its form or a modal): a request opened with an
        idle timeout gets its full timeout. Returns ``hf`` as it now is; never fails the person's
        request (the short deadline stays if Redis cannot be reached)."""
        if hf.full_deadline is None or not hf.is_pending:
            return hf
        try:
            if await self.store.start(hf.id):
                logger.info("a person started answering hf=%s channel=%s", hf.id, hf.channel)
        except StoreUnavailableError as exc:
            logger.warning("could not extend the deadline hf=%s channel=%s: %s", hf.id, hf.channel, exc)
            return hf
        return hf.model_copy(update={"deadline": hf.full_deadline, "full_deadline": None})

    async def withdraw(self, hf_id: str, caller: Caller) -> HumanFunction:
        """The agent cancels its own request (reason ``Request canceled by the agent``)."""
        hf = await self.store.get(hf_id)
        if not owns(caller, hf):
            raise UnknownRequestError(f"no request with id {hf_id!r} for this caller")
        outcome = Outcome(
            status=Status.CANCELED,
            action=Action.CANCEL,
            reason=WITHDRAWN_REASON,
            by=caller.name,
            via=AGENT_VIA,
            at=self.clock(),
        )
        return await self._end(hf, outcome, retain=False)

    async def expire(self, hf: HumanFunction) -> HumanFunction:
        """End a Human Function whose deadline passed (raises if it had ended already)."""
        return await self._end(hf, self.expired_outcome(hf), retain=False)

    async def reap(self) -> int:
        """Expire every overdue pending Human Function, however many, and queue the updates of
        their messages; returns how many index entries were due."""
        due = 0
        while True:
            reaped = await self.store.reap(self.clock())
            due += reaped.due
            load = _loaded_once(self.store.get)  # webhooks and step posts read each ended request once
            if reaped.expired:
                ENDED.labels(status=Status.EXPIRED.value).inc(reaped.expired)
                await self.webhooks.announce_ended(reaped.ended, load)
            to_update = reaped.to_update + await self._step_posts_to_update(reaped, load)
            if to_update:
                await self.queue_updates(to_update)
            if reaped.due < REAP_BATCH:
                return due

    async def _step_posts_to_update(
        self, reaped: Reaped, load: Callable[[str], Awaitable[HumanFunction]]
    ) -> list[tuple[str, str]]:
        """(id, channel) of the requests this pass ended whose own channel posted nothing (a web
        form) but whose escalation steps did: their step posts need the outcome too."""
        own = {hf_id for hf_id, _ in reaped.to_update}
        found: list[tuple[str, str]] = []
        for hf_id in reaped.ended:
            if hf_id in own:
                continue
            try:
                hf = await load(hf_id)
            except UnknownRequestError:
                continue
            channel = update_channel(hf) if hf.posts else None
            if channel is not None:
                found.append((hf_id, channel))
        return found

    async def queue_updates(self, ended: list[tuple[str, str]]) -> None:
        """Queue the update jobs of ended functions (id, channel), in one round trip."""
        async with self.store.redis.pipeline(transaction=False) as pipe:
            for hf_id, channel in ended:
                for command in self.jobs.update(hf_id, channel):
                    pipe.execute_command(*command)
            await pipe.execute()

    def expired_outcome(self, hf: Expiring) -> Outcome:
        """How ``hf`` ends when its deadline passes: canceled, "Request timed out after ..."; under
        a policy with ``on_timeout = "decline"``, declined, "No answer within ... (policy ...)"."""
        action = Action.DECLINE if hf.on_timeout == "decline" else Action.CANCEL
        return expired_outcome(ending_reason(hf, hf.timeout_seconds), self.clock(), action)

    async def record(self, hf_id: str, event: audit.Event, **fields: Any) -> None:
        """Append ``event`` to ``hf_id``'s audit trail, now (``gateway.core.audit.record``)."""
        await audit.record(self.store.redis, self.store.audit, hf_id, event, self.clock(), **fields)

    async def refused(self, hf: HumanFunction, who: str | None, where: str, why: str) -> None:
        """Someone's answer to ``hf`` was refused and changed nothing: its audit trail and the
        ``request.refused`` webhooks hear of it (``humangate_refused_answers_total{reason}`` counts it)."""
        await self.record(hf.id, "refused", who=who, where=where, why=why)
        await self.webhooks.announce("request.refused", hf, {"who": who, "where": where, "why": why})

    async def _refused(self, hf: HumanFunction, answer: Answer, why: audit.Why) -> None:
        await self.refused(hf, audit.who_of(answer.person, answer.by, answer.via), answer.via, why)

    async def _end_answer(
        self,
        hf: HumanFunction,
        answer: Answer,
        outcome: Outcome,
        *,
        turns: list[int] | None = None,
        approval: tuple[str, Approval] | None = None,
    ) -> HumanFunction:
        """End ``hf`` with a person's ``answer``; one that came after another ending (or after the
        deadline) is refused, and its audit trail says so. An approval that cannot count
        (``ApprovalRefusedError``) is left to the caller."""
        try:
            ended = await self._end(hf, outcome, retain=True, turns=turns, approval=approval)
        except ApprovalRefusedError:
            raise
        except ClosedError:
            await self._refused(hf, answer, "already_ended")
            raise
        if ended.status is Status.EXPIRED:
            await self._refused(hf, answer, "already_ended")
            raise ExpiredError("this request expired before the answer arrived")
        return ended

    async def _end(
        self,
        hf: HumanFunction,
        outcome: Outcome,
        *,
        retain: bool,
        turns: list[int] | None = None,
        approval: tuple[str, Approval] | None = None,
    ) -> HumanFunction:
        posts_on = update_channel(hf) if hf.steps else hf.channel  # steps may post where it does not
        update = self.jobs.update(hf.id, posts_on) if posts_on and get_channel_posts(posts_on) else []
        ended = await self.store.finish(
            hf.id,
            outcome,
            update,
            retain=retain and self.settings.result_retention > 0,
            replicated=retain,  # a person's answer: on the replicas before the person is told
            turns=turns,
            approval=approval,
        )
        if approval is not None and ended.status is not Status.EXPIRED:  # counted; announced first
            await self._approved(ended, approval[0], outcome.via)
        if not ended.is_pending:  # one approval of several leaves it pending
            ENDED.labels(status=ended.status.value).inc()
            await self.webhooks.announce("request.ended", ended)
        if update and ended.posts and not ended.refs and not ended.delivery_attempts:
            # Its own channel posted nothing (the web form), so the ending (or an approval) queued no
            # update; its steps' posts still need one.
            await self.queue_updates([(hf.id, posts_on or hf.channel)])
        return ended


def _loaded_once(
    get: Callable[[str], Awaitable[HumanFunction]],
) -> Callable[[str], Awaitable[HumanFunction]]:
    """``get``, reading each request at most once (its first answer is kept)."""
    seen: dict[str, HumanFunction] = {}

    async def load(hf_id: str) -> HumanFunction:
        if hf_id not in seen:
            seen[hf_id] = await get(hf_id)
        return seen[hf_id]

    return load


def outcome_of(answer: Answer, content: dict[str, Any] | None, at: float) -> Outcome:
    """How a person's ``answer`` (its checked ``content``) ends a request, at ``at``."""
    return Outcome(
        status=STATUS_OF_ACTION[answer.action],
        action=answer.action,
        content=content,
        reason=answer.reason,
        by=answer.by,
        via=answer.via,
        at=at,
        person=answer.person,
    )


def get_channel_posts(channel: str) -> bool:
    """Whether ``channel`` posts messages that show a request (and so need updating when it ends)."""
    platform = CHANNELS.get(channel)
    return platform is not None and platform.posts
