"""The durable schedule against a real Redis: requests opened under a policy with steps and
reminders schedule them in the same step; a due entry fires once however many workers race for it,
never after its request ended, and never before it is due (docs/escalation.md#the-schedule)."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis
from rq import Queue
from rq.serializers import JSONSerializer

from gateway.core import redis_keys as keys
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.queue import JobRecorder, queue_name
from gateway.core.schedule import CLAIM_LEASE, Entry, Firing, Schedule, add
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore
from schemas.policies import parse_policies
from schemas.settings import Settings
from tests.fakes.slack import FakeSlack
from workers.scheduling import HANDLERS

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
POLICY = """\
[policies.oncall]
timeout = 600
max_pending = 100
rate_limit = 100
remind = [30, 90]
[[policies.oncall.steps]]
after = 0
channel = "slack"
[[policies.oncall.steps]]
after = 60
channel = "teams"
approvers = ["teams:0f0e0d0c-0b0a-0908-0706-050403020100"]
"""


@dataclass
class Setup:
    service: HumanFunctionService
    sync: SyncRedis

    def schedule(self) -> Schedule:
        return Schedule(self.sync, HANDLERS)

    def queued(self, channel: str) -> list[str]:
        return Queue(queue_name(channel), connection=self.sync, serializer=JSONSerializer).job_ids


@pytest.fixture
async def setup(settings: Settings, slack: FakeSlack) -> AsyncIterator[Setup]:
    assert settings.redis_url is not None
    redis, sync = Redis.from_url(settings.redis_url), SyncRedis.from_url(settings.redis_url)
    store = HumanFunctionStore(redis)
    configured = slack.settings(settings)
    service = HumanFunctionService(store, JobRecorder(), configured, policies=parse_policies(POLICY))
    yield Setup(service, sync)
    await redis.aclose()
    sync.close()


async def test_opening_schedules_the_later_steps_and_reminders_in_the_same_step(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, None, "Restart the API?", APPROVAL)
    assert hf.channel == "slack" and [s.channel for s in hf.steps] == ["slack", "teams"]
    rows: list[tuple[bytes, float]] = setup.sync.zrange(keys.SCHEDULE, 0, -1, withscores=True)  # type: ignore[assignment]
    entries = dict(rows)
    assert entries == {
        f"step:{hf.id}:1:teams".encode(): pytest.approx(hf.created_at + 60),
        f"remind:{hf.id}:0:slack".encode(): pytest.approx(hf.created_at + 30),
        f"remind:{hf.id}:1:slack".encode(): pytest.approx(hf.created_at + 90),
    }


async def test_an_entry_fires_once_when_due_and_queues_its_job(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, None, "Restart the API?", APPROVAL)
    schedule = setup.schedule()
    assert schedule.fire_due(hf.created_at + 59) == [Entry("remind", hf.id, "0:slack")]
    assert schedule.fire_due(hf.created_at + 59) == []  # fired once
    assert f"hg-remind-{hf.id}-0-slack" in setup.queued("slack")
    assert (await setup.service.store.get(hf.id)).fired == []
    assert schedule.fire_due(hf.created_at + 60) == [Entry("step", hf.id, "1:teams")]
    assert setup.queued("teams") == [f"hg-post_step-{hf.id}-1-teams"]
    fired = await setup.service.store.get(hf.id)
    assert fired.fired == [1]
    assert "teams:0f0e0d0c-0b0a-0908-0706-050403020100" in fired.approvers  # the step's approvers answer too


async def test_nothing_fires_after_the_request_ended(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, None, "Restart the API?", APPROVAL)
    await setup.service.withdraw(hf.id, ANONYMOUS_CALLER)
    assert setup.schedule().fire_due(hf.created_at + 600) == []
    assert setup.sync.zcard(keys.SCHEDULE) == 0  # its entries are dropped as they come due
    assert setup.queued("teams") == [] and not any("remind" in j for j in setup.queued("slack"))


async def test_racing_workers_fire_each_entry_exactly_once(setup: Setup) -> None:
    opened = [
        (await setup.service.open(ANONYMOUS_CALLER, None, f"Restart {n}?", APPROVAL))[0] for n in range(50)
    ]
    later = max(hf.created_at for hf in opened) + 120
    fired: list[list[Entry]] = [[] for _ in range(4)]
    start = threading.Barrier(4)

    def race(slot: int) -> None:
        with SyncRedis(connection_pool=setup.sync.connection_pool) as own:
            schedule = Schedule(own, HANDLERS)
            start.wait()
            fired[slot] = schedule.fire_due(later)

    threads = [threading.Thread(target=race, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    members = [entry.member for batch in fired for entry in batch]
    assert len(members) == len(set(members)) == 150  # 50 steps and 100 reminders, each once
    assert len(setup.queued("teams")) == 50


async def test_entries_of_unknown_kinds_wait_for_a_worker_that_knows_them(setup: Setup) -> None:
    now = time.time()
    await add(setup.service.store.redis, [(Entry("webhook", "evt1", "3"), now - 1)])
    assert Schedule(setup.sync, {}).fire_due(now) == []
    assert setup.sync.zscore(keys.SCHEDULE, "webhook:evt1:3") is not None
    knowing = Schedule(
        setup.sync, {"webhook": lambda entry: Firing("", [("SET", "hg:test:fired", entry.arg)])}
    )
    assert knowing.fire_due(now) == [Entry("webhook", "evt1", "3")]
    assert setup.sync.get("hg:test:fired") == b"3"


async def test_what_a_dead_worker_claimed_fires_after_its_lease(setup: Setup) -> None:
    hf, _ = await setup.service.open(ANONYMOUS_CALLER, None, "Restart the API?", APPROVAL)
    due, claimed = setup.schedule().claim(hf.created_at + 60)  # then the worker dies
    assert due == 2 and {e.kind for e in claimed} == {"step", "remind"}
    assert setup.schedule().fire_due(hf.created_at + 61) == []  # leased: nobody else takes them
    later = hf.created_at + 60 + CLAIM_LEASE
    fired = setup.schedule().fire_due(later)
    assert set(claimed) <= set(fired)  # (with the second reminder, due by then too)
    assert setup.queued("teams") == [f"hg-post_step-{hf.id}-1-teams"]
