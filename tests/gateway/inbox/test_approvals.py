"""Approvals in the operators' inbox and on the web form's page, through a real gateway process
(docs/policies.md#approvals): operators approve in turn, the request shows the count and whose turn
it is, an operator out of turn is refused (403) and nothing changes."""

from __future__ import annotations

import asyncio
import html
from pathlib import Path

import httpx

from tests.conftest import StartGateway
from tests.gateway.flows import WAIT, start_call
from tests.gateway.inbox.operators import create_key, csrf_of, signed_in
from tests.gateway.inbox.test_routes import events_of
from tests.mcp_client import text_of

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
ANSWER = {"hg-action": "accept", "f.approved": "true"}


async def test_operators_approve_in_turn_in_the_inbox(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    policy = tmp_path / "humangate.toml"
    policy.write_text(
        '[policies.chain]\napprovers = ["operator:alice", "operator:bo"]\napprovals = 2\n'
        'order = "sequential"\n'
    )
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(policy))
    alice, bo = await create_key(redis_url, "alice"), await create_key(redis_url, "bo")
    call = start_call(gateway.url, {"message": "Export the data?", "schema": APPROVAL, "uiType": "web"})
    form_url = await call.form_url()
    hf_id = form_url.rsplit("/", 1)[1].split(".")[0]
    async with httpx.AsyncClient(timeout=WAIT) as browser:
        page = html.unescape((await browser.get(form_url)).text)
    assert "0 of 2 approvals." in page and "Waiting for operator:alice." in page
    # No web sign-in here: the page says where it can be answered, the inbox; so does the agent's progress.
    assert "or in the inbox (/inbox) with an operator key its approvers name." in page
    assert f"answer in the inbox at {gateway.url}/inbox" in (call.progress[0][2] or "")

    async with signed_in(gateway.url, bo) as client:
        shown = await client.get(f"/inbox/{hf_id}")
        early = await client.post(f"/inbox/{hf_id}", data=ANSWER | {"hg-csrf": csrf_of(shown.text)})
        assert early.status_code == 403
        assert "It is not your turn: this request waits for operator:alice first." in html.unescape(
            early.text
        )
    async with (
        signed_in(gateway.url, bo) as watcher,
        watcher.stream("GET", "/inbox/events") as stream,
        signed_in(gateway.url, alice) as client,
    ):
        updates = events_of(stream)
        name, snapshot = await asyncio.wait_for(anext(updates), WAIT)
        assert name == "snapshot" and snapshot["requests"][0]["approvals"] == "0 of 2 approvals"
        shown = await client.get(f"/inbox/{hf_id}")
        first = await client.post(f"/inbox/{hf_id}", data=ANSWER | {"hg-csrf": csrf_of(shown.text)})
        assert first.status_code == 303 and first.headers["location"] == f"/inbox/{hf_id}"
        again = await client.post(f"/inbox/{hf_id}", data=ANSWER | {"hg-csrf": csrf_of(shown.text)})
        assert again.status_code == 403  # docs/policies.md: a person approves once, whatever the order
        assert "You have already approved this request." in html.unescape(again.text)
        assert "not your turn" not in again.text
        after = html.unescape((await client.get(f"/inbox/{hf_id}")).text)
        assert "1 of 2 approvals: alice." in after and "Waiting for operator:bo." in after
        listed = html.unescape((await client.get("/inbox")).text)
        assert '<span class="approvals">1 of 2 approvals: alice</span>' in listed
        name, live = await asyncio.wait_for(anext(updates), WAIT)  # every open inbox hears of it
        assert (name, live["id"], live["approvals"]) == ("added", hf_id, "1 of 2 approvals: alice")
    assert not call.task.done()
    async with signed_in(gateway.url, bo) as client:
        shown = await client.get(f"/inbox/{hf_id}")
        done = await client.post(f"/inbox/{hf_id}", data=ANSWER | {"hg-csrf": csrf_of(shown.text)})
        assert done.status_code == 303 and done.headers["location"] == "/inbox?done=1"
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    approvals = (result.structured_content or {})["approvals"]
    assert [a["by"] for a in approvals] == [
        {"channel": "inbox", "id": "operator:alice", "name": "alice"},
        {"channel": "inbox", "id": "operator:bo", "name": "bo"},
    ]
    # docs/audit.md: operators named as approvers name them; the last approval before the end it brings.
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        trail = await client.get(f"/v1/requests/{hf_id}/events", headers={"Authorization": f"Bearer {alice}"})
    assert trail.status_code == 200, trail.text
    said = [
        {k: v for k, v in e.items() if k in ("event", "who", "where", "why", "count", "outcome")}
        for e in trail.json()["events"]
        if e["event"] in ("refused", "approved", "ended")
    ]
    assert said == [
        {"event": "refused", "who": "operator:bo", "where": "inbox", "why": "not_your_turn"},
        {"event": "approved", "who": "operator:alice", "where": "inbox", "count": 1},
        {"event": "refused", "who": "operator:alice", "where": "inbox", "why": "already_approved"},
        {"event": "approved", "who": "operator:bo", "where": "inbox", "count": 2},
        {"event": "ended", "outcome": "accepted", "who": "operator:bo", "where": "inbox"},
    ]
