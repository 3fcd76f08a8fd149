"""Approvals in the store and the service against a real redis-server (docs/policies.md#approvals):
each acceptance is recorded once per person, atomically, however many arrive at once; a request is
accepted exactly when the count is reached; an answer no platform attributes to a person never
counts; and the result carries the approvals with each content's key order kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from channels.approvers import ALREADY_APPROVED
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.store import HumanFunctionStore
from schemas.errors import AlreadyAnsweredError, ApprovalRefusedError, NotAnApproverError
from schemas.models import Action, Answer, Approval, HumanFunction, Outcome, Person, Status
from schemas.policies import parse_policies
from schemas.results import structured_result
from schemas.settings import Settings
from tests.channels.inprocess import serving

NOW = 1_800_000_000.0
SCHEMA = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "boolean"}}}


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[HumanFunctionStore]:
    redis = Redis.from_url(redis_url)
    yield HumanFunctionStore(redis, retention=600)
    await redis.aclose()


def needing(approvals: int, hf_id: str = "a1") -> HumanFunction:
    return HumanFunction(
        id=hf_id,
        requester="anonymous",
        channel="web",
        message="Deploy?",
        request_schema=SCHEMA,
        created_at=NOW,
        deadline=NOW + 180,
        form_secret="s" * 32,
        approvers=["slack:U1", "slack:U2", "slack:U3"],
        approvals_needed=approvals,
    )


def accept(user: str, at: float = NOW + 1) -> tuple[Outcome, tuple[str, Approval]]:
    content = {"zeta": user, "alpha": True}  # not in alphabetical order: the order must be kept
    outcome = Outcome(status=Status.ACCEPTED, action=Action.ACCEPT, content=content, via="slack", at=at)
    by = {"channel": "slack", "id": user, "name": user.lower()}
    return outcome, (f"slack:{user}", Approval(by=by, at=at, content=content))


async def approve(store: HumanFunctionStore, user: str, hf_id: str = "a1") -> HumanFunction:
    outcome, approval = accept(user)
    return await store.finish(hf_id, outcome, [], retain=True, approval=approval)


async def test_approvals_arriving_at_once_end_it_exactly_at_the_count(store: HumanFunctionStore) -> None:
    await store.create(needing(2), "fp", "timed out", [])
    results = await asyncio.gather(
        *(approve(store, user) for user in ("U1", "U2", "U3")), return_exceptions=True
    )
    ended = [r for r in results if isinstance(r, HumanFunction) and r.status is Status.ACCEPTED]
    pending = [r for r in results if isinstance(r, HumanFunction) and r.is_pending]
    late = [r for r in results if isinstance(r, AlreadyAnsweredError)]
    assert (len(ended), len(pending), len(late)) == (1, 1, 1)
    (accepted,) = ended
    assert accepted.outcome is not None and accepted.outcome.approvals is not None
    assert len(accepted.outcome.approvals) == 2 == len(accepted.approvals)
    stored = await store.get("a1")
    assert stored.outcome == accepted.outcome
    raw = await store.redis.hget("hg:hf:{a1}", "outcome")
    assert raw is not None and b'"content":{"zeta":' in raw  # each approval as Python wrote it


async def test_a_person_approves_once_however_often_they_click(store: HumanFunctionStore) -> None:
    await store.create(needing(2), "fp", "timed out", [])
    results = await asyncio.gather(*(approve(store, "U1") for _ in range(5)), return_exceptions=True)
    refused = [r for r in results if isinstance(r, ApprovalRefusedError)]
    assert len(refused) == 4 and all(str(r) == ALREADY_APPROVED for r in refused)
    hf = await store.get("a1")
    assert hf.is_pending and [a.by["id"] for a in hf.approvals] == ["U1"]
    done = await approve(store, "U2")
    assert done.status is Status.ACCEPTED


async def test_a_request_needing_one_approval_stays_as_it_was(store: HumanFunctionStore) -> None:
    await store.create(needing(1), "fp", "timed out", [])
    outcome, _ = accept("U1")
    ended = await store.finish("a1", outcome, [], retain=True)
    assert ended.outcome is not None and ended.outcome.approvals is None
    assert "approvals" not in structured_result(ended.outcome, "a1")


async def test_an_answer_nobody_vouches_for_never_counts(settings: Settings) -> None:
    async with serving(settings) as (runtime, _):
        runtime.service.policies = parse_policies(
            '[policies.two]\napprovers = ["slack:U1", "slack:U2"]\napprovals = 2\n', "test.toml"
        )
        hf, _ = await runtime.service.open(ANONYMOUS_CALLER, "web", "Deploy?", SCHEMA)
        assert (hf.approvals_needed, hf.order, hf.on_timeout) == (2, "any", "cancel")
        link = Answer(action=Action.ACCEPT, content={"alpha": True}, by="web form", via="web")
        with pytest.raises(NotAnApproverError):
            await runtime.service.answer(hf, link)
        ada = Person(channel="slack", id="U1", name="ada")
        first = await runtime.service.answer(hf, link.model_copy(update={"person": ada, "via": "slack"}))
        assert first.is_pending and first.approvals[0].by == {"channel": "slack", "id": "U1", "name": "ada"}
        bo = Person(channel="slack", id="U2", name="bo")
        declined = Answer(action=Action.DECLINE, reason="No", by="bo", via="slack", person=bo)
        ended = await runtime.service.answer(first, declined)
        assert ended.status is Status.DECLINED and ended.outcome is not None
        structured = structured_result(ended.outcome, hf.id)
        assert structured["action"] == "decline" and [a["by"]["id"] for a in structured["approvals"]] == [
            "U1"
        ]
