"""Escalation steps and reminders through real gateway and worker processes and the platform fakes
(docs/escalation.md): a step posts on time (and not once the request was answered), reminders reply
in the thread of every live post on Slack, Discord and Teams, nothing is sent after the end, a step
due while every process was stopped posts once after the restart, and two workers never post one
step twice."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from gateway.core import audit
from gateway.core import redis_keys as keys
from tests.channels.discord.flows import outcome_of as discord_outcome
from tests.channels.teams.flows import outcome_of
from tests.conftest import StartGateway, StartWorker
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.teams import ADA, BO, FakeTeams, card_of
from tests.fakes.teams_activities import invoke, send
from tests.gateway.flows import start_call
from tests.gateway.inbox.operators import create_key, signed_in
from tests.gateway.inbox.test_routes import events_of

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
WAIT = 30.0
"""Seconds any condition may take before the test fails."""
APPROVER = "slack:U0ADA"


async def until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Wait until ``condition()`` holds (checked every 50 ms), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)  # polling a condition, bounded by the deadline


def policy(
    tmp_path: Path,
    steps: list[tuple[float, str]],
    remind: list[float] | None = None,
    mention: dict[int, str] | None = None,
    timeout: float = 120,
) -> Path:
    lines = ["[policies.oncall]", f"timeout = {timeout:g}", "max_pending = 100", "rate_limit = 100"]
    lines.append(f'approvers = ["{APPROVER}"]')
    if remind:
        lines.append(f"remind = {remind!r}")
    for index, (after, channel) in enumerate(steps):
        lines += ["[[policies.oncall.steps]]", f"after = {after}", f'channel = "{channel}"']
        if mention and index in mention:
            lines.append(f'mention = ["{mention[index]}"]')
    path = tmp_path / "escalation.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def schedule_size(redis_url: str) -> int:
    with redis.Redis.from_url(redis_url) as client:
        return int(client.zcard(keys.SCHEDULE))


async def create(client: httpx.AsyncClient, message: str = "Restart the API?") -> dict[str, Any]:
    created = await client.post("/v1/requests", json={"message": message, "schema": APPROVAL})
    assert created.status_code == 201, created.text
    body: dict[str, Any] = created.json()
    return body


async def escalations(client: httpx.AsyncClient, wanted: float) -> None:
    """Wait until the gateway's ``/metrics`` counts ``wanted`` escalations (a worker counts them)."""
    deadline = time.monotonic() + WAIT
    while f"humangate_escalations_total {wanted}" not in (await client.get("/metrics")).text.splitlines():
        assert time.monotonic() < deadline, "humangate_escalations_total never reached " + str(wanted)
        await asyncio.sleep(0.1)  # polling a condition, bounded by the deadline


def env(slack: FakeSlack, teams: FakeTeams, discord: FakeDiscord | None = None) -> dict[str, str]:
    return {**slack.env(), **teams.env(), **(discord.env() if discord is not None else {})}


async def test_a_step_posts_on_time_and_every_post_shows_the_outcome(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path, redis_url: str
) -> None:
    mention = {0: "slack:U0ADA", 1: f"teams:{ADA.aad_id}"}
    path = policy(tmp_path, [(0, "slack"), (1, "teams")], mention=mention)
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
        assert request["channel"] == "slack"
        (posted,) = await slack.posted()
        assert "<@U0ADA>" in str(posted["blocks"])  # the first step's mention
        (activity,) = await teams.posted()
        card = card_of(activity)
        assert card["msteams"]["entities"] == [
            {
                "type": "mention",
                "text": f"<at>{ADA.aad_id}</at>",
                "mentioned": {"id": ADA.aad_id, "name": ADA.aad_id},
            }
        ]
        assert card["body"][0]["text"] == f"<at>{ADA.aad_id}</at>"
        await escalations(client, 1.0)
        lateness = teams.post_calls()[0].at - (request["created_at"] + 1)
        # The schedule queues the step's job within 0.25 s of its time (docs/escalation.md), and the
        # worker imported the Teams client as it started (workers.preload), so its first post is prompt.
        assert -0.05 < lateness < 1.0, f"the step posted {lateness:.2f} s after its time"
        assert "Only slack:U0ADA may answer" in str(card_of(activity))
        assert (await client.delete(f"/v1/requests/{request['id']}")).status_code == 200
    await slack.updated(lambda args: args["ts"] == posted["ts"])
    await teams.edited(activity["id"], lambda card: outcome_of(card).startswith("Withdrawn"))
    # docs/audit.md: the escalated request's trail, in order.
    client_of_trail = AsyncRedis.from_url(redis_url)
    try:
        trail = [
            (e["event"], e.get("channel"), e.get("step"))
            for e in await audit.trail(client_of_trail, request["id"])
        ]
    finally:
        await client_of_trail.aclose()
    assert trail[0][0] == "created" and trail[-1][0] == "ended"
    first, second, escalated = ("posted", "slack", 0), ("posted", "teams", 1), ("escalated", "teams", 1)
    assert trail.index(first) < trail.index(second) < trail.index(escalated), trail


async def test_the_agents_progress_says_which_steps_are_live(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path
) -> None:
    path = policy(tmp_path, [(0, "slack"), (1, "teams")])
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    call = start_call(gateway.url, {"message": "Restart the API?", "schema": APPROVAL})
    (first,) = await call.wait_for_progress()
    assert "escalated" not in first
    (escalated,) = await call.wait_for_progress(containing="escalated")
    assert re.match(
        r"Waiting for a person on slack \(Human Function [0-9a-f]+\); escalated to teams after 1 second; ",
        escalated,
    ), escalated
    call.task.cancel()


async def test_a_step_does_not_post_once_the_request_was_answered(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path, redis_url: str
) -> None:
    path = policy(tmp_path, [(0, "slack"), (1.5, "teams")], remind=[1])
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
        await slack.posted()
        assert schedule_size(redis_url) == 2
        assert (await client.delete(f"/v1/requests/{request['id']}")).status_code == 200
    await slack.updated()
    # Its entries come due and are dropped, unfired, by the workers.
    await until(lambda: schedule_size(redis_url) == 0, "the schedule to drop the ended request's entries")
    assert teams.post_calls() == []
    assert slack.thread_replies() == []


async def test_reminders_reply_in_the_thread_of_every_live_post(
    start_gateway: StartGateway,
    slack: FakeSlack,
    teams: FakeTeams,
    discord: FakeDiscord,
    tmp_path: Path,
    redis_url: str,
) -> None:
    path = policy(tmp_path, [(0, "slack"), (0, "discord"), (0.5, "teams")], remind=[2])
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams, discord))
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
        (posted,) = await slack.posted()
        (message,) = await discord.posted()
        (activity,) = await teams.posted()
        (in_slack,) = await slack.replied_in_threads()
        (in_discord,) = await discord.replied()
        (in_teams,) = await teams.replied()
        reminder = "Reminder: this request is still waiting for an answer"
        assert in_slack["thread_ts"] == posted["ts"] and reminder in in_slack["text"]
        assert "Only slack:U0ADA may answer" in in_slack["text"]
        assert in_discord["message_reference"]["message_id"] == message["id"]
        assert reminder in in_discord["content"]
        assert in_teams["replyToId"] == activity["id"] and reminder in in_teams["text"]
        assert slack.thread_replies()[0]["ts"] != posted["ts"]
        await until(lambda: schedule_size(redis_url) == 0, "the reminder to fire")
        assert (await client.delete(f"/v1/requests/{request['id']}")).status_code == 200
    await slack.updated(lambda args: args["ts"] == posted["ts"])
    await discord.edited(message["id"], lambda body: discord_outcome(body).startswith("Withdrawn"))
    await teams.edited(activity["id"], lambda card: outcome_of(card).startswith("Withdrawn"))
    assert len(slack.thread_replies()) == len(discord.replies_to()) == len(teams.replies) == 1


@pytest.mark.slow
async def test_a_step_due_while_every_process_was_stopped_posts_once_after_the_restart(
    start_gateway: StartGateway,
    start_worker: StartWorker,
    slack: FakeSlack,
    teams: FakeTeams,
    tmp_path: Path,
    redis_url: str,
) -> None:
    path = policy(tmp_path, [(0, "slack"), (8, "teams")])  # a stopping worker may take 5 s (RQ's wait)
    settings = {"HUMANGATE_POLICY_FILE": str(path), **env(slack, teams)}
    gateway = start_gateway(worker=False, **settings)
    worker = start_worker("slack,teams", **settings)
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
    await slack.posted()
    gateway.stop()
    try:
        status = await asyncio.to_thread(worker.terminate, 20)
    except Exception:
        raise AssertionError(worker.output()) from None
    assert status == 0, worker.output()
    assert teams.post_calls() == [], "the step posted before every process had stopped"
    due = request["created_at"] + 8
    await until(lambda: time.time() > due + 0.5, "the step's time to pass while nothing runs")
    assert teams.post_calls() == [] and schedule_size(redis_url) == 1
    # Everything starts again, with two workers that could both fire it.
    start_gateway(worker=False, **settings)
    start_worker("slack,teams", **settings)
    start_worker("slack,teams", **settings)
    (activity,) = await teams.posted()
    await until(lambda: schedule_size(redis_url) == 0, "the schedule to be empty")
    with redis.Redis.from_url(redis_url) as client_:
        await until(lambda: client_.llen("rq:queue:humangate-teams") == 0, "the teams queue to drain")
    assert len(teams.post_calls()) == 1 and activity["id"]


async def test_two_workers_never_post_one_step_twice(
    start_gateway: StartGateway,
    start_worker: StartWorker,
    slack: FakeSlack,
    teams: FakeTeams,
    tmp_path: Path,
    redis_url: str,
) -> None:
    path = policy(tmp_path, [(0, "slack"), (1, "teams")])
    settings = {"HUMANGATE_POLICY_FILE": str(path), **env(slack, teams)}
    gateway = start_gateway(worker=False, **settings)
    start_worker("slack,teams", **settings)
    start_worker("slack,teams", **settings)
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        ids = {(await create(client, f"Restart {n}?"))["id"] for n in range(12)}
    await teams.posted(12)
    await until(lambda: schedule_size(redis_url) == 0, "every step to fire")
    with redis.Redis.from_url(redis_url) as client_:
        await until(lambda: client_.llen("rq:queue:humangate-teams") == 0, "the teams queue to drain")
    posted = teams.post_calls()
    assert len(posted) == 12
    assert len({str(call.json()) for call in posted}) == 12  # one post per request, all different
    assert len(ids) == 12


async def test_a_reminder_is_a_notice_in_the_inbox(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path, redis_url: str
) -> None:
    path = policy(tmp_path, [(0, "slack")], remind=[1.5])
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    key = await create_key(redis_url, "ada")
    async with (
        signed_in(gateway.url, key) as inbox,
        inbox.stream("GET", "/inbox/events") as response,
    ):
        updates = events_of(response)
        name, _ = await asyncio.wait_for(anext(updates), WAIT)
        assert name == "snapshot"
        request = await create(inbox)
        name, added = await asyncio.wait_for(anext(updates), WAIT)
        assert (name, added["id"]) == ("added", request["id"])
        name, notice = await asyncio.wait_for(anext(updates), WAIT)
        assert name == "reminded" and notice["id"] == request["id"]
        assert notice["text"].startswith("Reminder: this request is still waiting for an answer")
        assert "Only slack:U0ADA may answer" in notice["text"]
        (in_thread,) = await slack.replied_in_threads()
        assert in_thread["text"] == notice["text"]


async def test_the_posts_of_a_web_request_s_steps_show_its_outcome(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path
) -> None:
    path = policy(tmp_path, [(0, "web"), (0.5, "slack")])
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
        assert request["channel"] == "web"
        (posted,) = await slack.posted()
        assert (await client.delete(f"/v1/requests/{request['id']}")).status_code == 200
    await slack.updated(lambda args: args["ts"] == posted["ts"])


async def test_the_posts_of_a_web_request_s_steps_show_its_timeout(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path
) -> None:
    """Nobody waits on the request and nobody answers: the reaper ends it, and its step's post (its
    own channel, the web form, posted nothing) still shows that it timed out."""
    path = policy(tmp_path, [(0, "web"), (0.5, "slack")], timeout=3)
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
        assert request["channel"] == "web"
        (posted,) = await slack.posted()
    await slack.updated(lambda args: args["ts"] == posted["ts"] and "timed out" in str(args).lower())


async def test_a_steps_approvers_may_answer_once_it_posted(
    start_gateway: StartGateway, slack: FakeSlack, teams: FakeTeams, tmp_path: Path
) -> None:
    path = policy(tmp_path, [(0, "slack"), (1, "teams")])
    path.write_text(path.read_text() + f'approvers = ["teams:{BO.aad_id}"]\n')
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **env(slack, teams))
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        request = await create(client)
        (posted,) = await teams.posted()
        refused = await send(gateway.url, teams, invoke(teams, posted, "Approve", user=ADA))
        assert "You are not an approver for this request" in str(refused.json())
        assert (await client.get(f"/v1/requests/{request['id']}")).json()["status"] == "pending"
        approved = await send(gateway.url, teams, invoke(teams, posted, "Approve", user=BO))
        assert approved.status_code == 200
        ended = (await client.get(f"/v1/requests/{request['id']}")).json()
        assert ended["status"] == "accepted"
    await slack.updated()  # the first post shows the outcome too
