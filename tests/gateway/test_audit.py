"""The audit trail and the shared metrics through real processes (docs/audit.md): gateways with
their workers, the fake Slack driven by signed callbacks, REST, ``humangate audit export`` and
``/metrics``; the raw Redis is searched for anything secret."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import GatewayProcess, StartGateway, run_cli
from tests.fakes.slack import CHANNEL, SIGNING_SECRET, TOKEN, FakeSlack
from tests.fakes.slack_callbacks import click, send, submission

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
KEYS = "bot:k-bot-secret-1,other:k-other-secret-2"
BOT = {"Authorization": "Bearer k-bot-secret-1"}
OTHER = {"Authorization": "Bearer k-other-secret-2"}
POLICY = """\
[policies.gated]
callers   = ["bot"]
channels  = ["slack"]
approvers = ["slack:U1", "slack:U2"]
"""
RETENTION_DAYS = 2
WAIT = 60.0


@dataclass
class Scenario:
    """Three requests of the bot (accepted after a refusal, declined, and one more) and one of an
    anonymous caller that timed out, with what each was posted as."""

    gateway: GatewayProcess
    accepted: str
    declined: str
    timed_out: str
    form_tokens: list[str]


async def until(what: str, check: Any) -> Any:
    """``await check()`` once it returns something truthy; fails after ``WAIT`` seconds."""
    deadline = time.monotonic() + WAIT
    while not (found := await check()):
        assert time.monotonic() < deadline, f"{what} did not happen in time"
        await asyncio.sleep(0.05)
    return found


async def events(client: httpx.AsyncClient, hf_id: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/requests/{hf_id}/events", headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == hf_id
    return list(body["events"])


async def trail_with(
    client: httpx.AsyncClient, hf_id: str, headers: dict[str, str], *names: str
) -> list[Any]:
    """The trail of ``hf_id`` once its events are ``names`` (in this order)."""

    async def check() -> list[dict[str, Any]] | None:
        found = await events(client, hf_id, headers)
        return found if [e["event"] for e in found] == list(names) else None

    return list(await until(f"the trail {names} of {hf_id}", check))


def message_of(slack: FakeSlack, hf_id: str) -> dict[str, Any]:
    return next(m for m in slack.stored() if hf_id in json.dumps(m))


def without_times(trail: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in ("at", "id")} for e in trail]


async def run_scenario(start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path) -> Scenario:
    policy = tmp_path / "policies.toml"
    policy.write_text(POLICY)
    gateway = start_gateway(
        HUMANGATE_API_KEYS=KEYS,
        HUMANGATE_POLICY_FILE=str(policy),
        HUMANGATE_ANONYMOUS_TIMEOUT="3",
        HUMANGATE_AUDIT_RETENTION=str(RETENTION_DAYS),
        **slack.env(),
    )
    body = {"message": "Deploy v1?", "schema": APPROVAL}
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        ids, tokens = [], []
        for message, headers in (("Deploy v1?", BOT), ("Deploy v2?", BOT), ("Anyone there?", {})):
            created = await client.post(
                "/v1/requests", json={**body, "message": message, "uiType": "slack"}, headers=headers
            )
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
            tokens.append(created.json()["form_url"].rsplit("/", 1)[1])
        accepted, declined, timed_out = ids
        await slack.posted(3)
        for hf_id, headers in zip(ids, (BOT, BOT, {}), strict=True):
            await trail_with(client, hf_id, headers, "created", "posted")

        # Someone who is not an approver clicks Approve: refused, nothing changes; then an approver.
        posted = message_of(slack, accepted)
        assert (await send(gateway.url, click(posted, "hg:approve", "U3", slack.url))).status_code == 200
        await trail_with(client, accepted, BOT, "created", "posted", "refused")
        assert (await send(gateway.url, click(posted, "hg:approve", "U1", slack.url))).status_code == 200

        # Decline goes through the reason modal: opening it is in the trail.
        posted = message_of(slack, declined)
        assert (await send(gateway.url, click(posted, "hg:decline", "U2", slack.url))).status_code == 200
        view = await slack.opened_view()
        reason = {"reason": {"type": "plain_text_input", "value": "Too risky"}}
        assert (await send(gateway.url, submission(view, reason, "U2"))).status_code == 200
    return Scenario(gateway, accepted, declined, timed_out, tokens)


async def test_the_trails_of_an_accepted_a_declined_and_a_timed_out_request_in_order(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path, redis_url: str
) -> None:
    run = await run_scenario(start_gateway, slack, tmp_path)
    async with httpx.AsyncClient(base_url=run.gateway.url, timeout=WAIT) as client:
        accepted = await trail_with(client, run.accepted, BOT, "created", "posted", "refused", "ended")
        declined = await trail_with(client, run.declined, BOT, "created", "posted", "opened", "ended")
        timed_out = await trail_with(client, run.timed_out, {}, "created", "posted", "ended")
    posted = {"event": "posted", "channel": "slack", "target": CHANNEL, "step": 0}
    created = {"event": "created", "caller": "key:bot", "policy": "gated", "channels": ["slack"]}
    assert without_times(accepted) == [
        created,
        posted,
        {"event": "refused", "who": "slack:U3", "where": "slack", "why": "not_approver"},
        {
            "event": "ended",
            "outcome": "accepted",
            "who": "slack:U1",
            "name": "ada",
            "where": "slack",
            "answer": {"approved": True},
        },
    ]
    assert without_times(declined) == [
        created,
        posted,
        {"event": "opened", "who": "slack:U2", "where": "slack"},
        {
            "event": "ended",
            "outcome": "declined",
            "who": "slack:U2",
            "name": "bo",
            "where": "slack",
            "reason": "Too risky",
        },
    ]
    assert without_times(timed_out)[:2] == [
        {"event": "created", "caller": "anonymous:127.0.0.1", "channels": ["slack"]},
        posted,
    ]
    ended = timed_out[2]
    assert (ended["outcome"], ended["reason"]) == ("expired", "Request timed out after 3 seconds")
    for trail in (accepted, declined, timed_out):
        times = [e["at"] for e in trail]
        assert times == sorted(times) and all(t.endswith("Z") and "T" in t for t in times)

    # Kept HUMANGATE_AUDIT_RETENTION days after the last event, beyond the request itself.
    raw = redis.Redis.from_url(redis_url)
    for hf_id in (run.accepted, run.declined, run.timed_out):
        left = int(raw.pttl(f"hg:audit:{{{hf_id}}}"))
        assert RETENTION_DAYS * 86_400_000 - 120_000 < left <= RETENTION_DAYS * 86_400_000
        assert 0 < int(raw.pttl(f"hg:hf:{{{hf_id}}}")) < left


async def test_the_events_endpoint_answers_its_caller_and_operators_only(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path, redis_url: str
) -> None:
    run = await run_scenario(start_gateway, slack, tmp_path)
    created = run_cli("keys", "create", "auditor", "--operator", env={}, redis_url=redis_url)
    assert created.returncode == 0, created.stderr
    operator = {"Authorization": f"Bearer {created.stdout.strip()}"}
    async with httpx.AsyncClient(base_url=run.gateway.url, timeout=WAIT) as client:
        mine = await events(client, run.accepted, BOT)
        assert await events(client, run.accepted, operator) == mine
        assert [e["event"] for e in await events(client, run.timed_out, operator)][:2] == [
            "created",
            "posted",
        ]
        unknown = await client.get("/v1/requests/0123456789abcdef/events", headers=BOT)
        assert unknown.status_code == 404
        for headers in (OTHER, {}):  # another key, an anonymous caller: as if there were no such request
            theirs = await client.get(f"/v1/requests/{run.accepted}/events", headers=headers)
            assert theirs.status_code == 404
            assert theirs.json() == {
                "error": "UnknownRequestError",
                "detail": f"no request with id {run.accepted!r} for this caller",
            }
        assert (await client.get(f"/v1/requests/{run.timed_out}/events", headers=OTHER)).status_code == 404
        wrong = await client.get(
            f"/v1/requests/{run.accepted}/events", headers={"Authorization": "Bearer nope"}
        )
        assert wrong.status_code == 401


async def test_export_in_both_formats_parses_back_and_nothing_secret_is_kept(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path, redis_url: str
) -> None:
    run = await run_scenario(start_gateway, slack, tmp_path)
    async with httpx.AsyncClient(base_url=run.gateway.url, timeout=WAIT) as client:
        trails = {
            run.accepted: await trail_with(
                client, run.accepted, BOT, "created", "posted", "refused", "ended"
            ),
            run.declined: await trail_with(client, run.declined, BOT, "created", "posted", "opened", "ended"),
            run.timed_out: await trail_with(client, run.timed_out, {}, "created", "posted", "ended"),
        }
    everything = [event for trail in trails.values() for event in trail]

    lines = run_cli("audit", "export", env={}, redis_url=redis_url)
    assert lines.returncode == 0, lines.stderr
    exported = [json.loads(line) for line in lines.stdout.splitlines()]
    assert len(exported) == len(everything)
    assert sorted(exported, key=json.dumps) == sorted(everything, key=json.dumps)
    for hf_id, trail in trails.items():
        assert [e for e in exported if e["id"] == hf_id] == trail  # each trail oldest first

    table = run_cli("audit", "export", "--format", "csv", env={}, redis_url=redis_url)
    assert table.returncode == 0, table.stderr
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [(r["id"], r["event"], r["at"]) for r in rows] == [
        (e["id"], e["event"], e["at"]) for e in exported
    ]
    ended = next(r for r in rows if r["id"] == run.accepted and r["event"] == "ended")
    assert (ended["who"], json.loads(ended["answer"])) == ("slack:U1", {"approved": True})
    created = next(r for r in rows if r["id"] == run.accepted and r["event"] == "created")
    assert json.loads(created["channels"]) == ["slack"]

    # A range: from the refusal on, nothing of before it; --until before everything, nothing.
    refused = next(e for e in trails[run.accepted] if e["event"] == "refused")
    since = run_cli("audit", "export", "--since", refused["at"], env={}, redis_url=redis_url)
    ranged = [json.loads(line) for line in since.stdout.splitlines()]
    assert refused in ranged and all(e["at"] >= refused["at"] for e in ranged)
    assert len(ranged) < len(exported)
    early = run_cli("audit", "export", "--until", "2000-01-01", env={}, redis_url=redis_url)
    assert (early.returncode, early.stdout) == (0, "")
    bad = run_cli("audit", "export", "--since", "yesterday", env={}, redis_url=redis_url)
    assert bad.returncode == 2 and "--since/--until: 'yesterday' is not an ISO 8601 time" in bad.stderr

    # No secret, key or form token: in the exports, the endpoint's answers, or anything in Redis.
    secrets = ["k-bot-secret-1", "k-other-secret-2", TOKEN, SIGNING_SECRET, *run.form_tokens]
    secrets += [token.split(".", 1)[1] for token in run.form_tokens]
    raw = redis.Redis.from_url(redis_url)
    stored = [value for key in raw.scan_iter("hg:audit*") for value in dump(raw, key)]
    stored += [value for key in raw.scan_iter("hg:metrics:*") for value in dump(raw, key)]
    outputs = [lines.stdout, table.stdout, since.stdout, json.dumps(everything), *stored]
    for secret in secrets:
        assert not [text for text in outputs if secret in text], secret


def dump(raw: redis.Redis, key: bytes) -> list[str]:
    """Everything stored at ``key``, as text."""
    kind = raw.type(key)
    if kind == b"list":
        return [str(v) for v in raw.lrange(key, 0, -1)]
    if kind == b"zset":
        return [str(v) for v in raw.zrange(key, 0, -1)]
    if kind == b"hash":
        return [f"{k!s}={v!s}" for k, v in raw.hgetall(key).items()]
    raise AssertionError(f"unexpected {kind!r} at {key!r}")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_every_gateway_process_shows_the_shared_metrics_after_real_answers(
    start_gateway: StartGateway, slack: FakeSlack, tmp_path: Path, redis_url: str
) -> None:
    run = await run_scenario(start_gateway, slack, tmp_path)
    other = start_gateway(worker=False, **slack.env())  # answered nothing, delivered nothing
    async with httpx.AsyncClient(base_url=run.gateway.url, timeout=WAIT) as client:
        await trail_with(client, run.timed_out, {}, "created", "posted", "ended")
        await trail_with(client, run.declined, BOT, "created", "posted", "opened", "ended")
    accepted = ("channel", "slack"), ("outcome", "accepted"), ("policy", "gated")
    expired = ("channel", "slack"), ("outcome", "expired"), ("policy", "")
    scraped = []
    for gateway in (run.gateway, other):
        response = httpx.get(f"{gateway.url}/metrics", timeout=WAIT)
        assert response.status_code == 200
        found = samples(response.text)
        scraped.append(
            {
                k: v
                for k, v in found.items()
                if not k[0].startswith(("humangate_requests", "humangate_waiting"))
            }
        )
        assert found[("humangate_time_to_answer_seconds_count", accepted)] == 1
        assert found[("humangate_time_to_answer_seconds_count", expired)] == 1
        assert (
            found[("humangate_time_to_answer_seconds_bucket", tuple(sorted((*accepted, ("le", "+Inf")))))]
            == 1
        )
        assert 0 < found[("humangate_time_to_answer_seconds_sum", accepted)] < WAIT
        assert 3 <= found[("humangate_time_to_answer_seconds_sum", expired)] < WAIT
        assert found[("humangate_refused_answers_total", (("reason", "not_approver"),))] == 1
    assert scraped[0] == scraped[1]  # the same truth from every process


@pytest.mark.parametrize("answers", [True, False])
async def test_answers_are_kept_unless_turned_off(
    start_gateway: StartGateway, slack: FakeSlack, answers: bool
) -> None:
    gateway = start_gateway(HUMANGATE_AUDIT_ANSWERS=str(answers).lower(), **slack.env())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        created = await client.post(
            "/v1/requests", json={"message": "Go?", "schema": APPROVAL, "uiType": "slack"}
        )
        hf_id = created.json()["id"]
        await trail_with(client, hf_id, {}, "created", "posted")
        (message,) = await slack.posted()
        await send(gateway.url, click(message, "hg:approve", "U1", slack.url))
        ended = (await trail_with(client, hf_id, {}, "created", "posted", "ended"))[-1]
    assert ("answer" in ended) is answers
    assert ended.get("answer", {"approved": True}) == {"approved": True}
