"""The inbox over HTTP against real gateway processes: sign-in and its cookie, the headers, CSRF and
cross-site refusals, answering (which ends the request everywhere and updates its Slack message),
revocation, and the live updates of any process, bounded per operator."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import httpx

from gateway.inbox.sessions import MAX_STREAMS_PER_OPERATOR
from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.gateway.flows import WAIT, post_form, start_call
from tests.gateway.inbox.operators import create_key, csrf_of, revoke_key, signed_in
from tests.mcp_client import text_of

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string", "minLength": 3}},
    "required": ["approved"],
}


async def events_of(response: httpx.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a server-sent events response, as they arrive."""
    name = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


async def test_only_operator_keys_sign_in_and_the_cookie_is_locked_down(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway(HUMANGATE_API_KEYS="ci:env-key")
    operator = await create_key(redis_url, "ada")
    caller = await create_key(redis_url, "deploy-bot", operator=False)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        first = await client.get("/inbox")
        assert first.status_code == 200 and 'name="key"' in first.text and 'type="password"' in first.text
        for wrong in (caller, "env-key", "hg_not-a-key", ""):
            refused = await client.post("/inbox/sign-in", data={"key": wrong})
            assert refused.status_code == 401 and "not an operator key" in refused.text
            assert "set-cookie" not in refused.headers
        response = await client.post("/inbox/sign-in", data={"key": operator})
    assert response.status_code == 303 and response.headers["location"] == "/inbox"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("hg_inbox=") and "HttpOnly" in cookie and "Path=/inbox" in cookie
    assert "SameSite=strict" in cookie and "Secure" not in cookie and "Max-Age=43200" in cookie
    logs = gateway.output()
    assert operator not in logs and cookie.split(";")[0].split("=", 1)[1] not in logs
    assert "operator ada signed in to the inbox" in logs


async def test_the_cookie_is_secure_when_served_over_https(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway(HUMANGATE_PUBLIC_URL="https://humangate.example")
    key = await create_key(redis_url, "ada")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        response = await client.post("/inbox/sign-in", data={"key": key})
    assert response.status_code == 303 and "Secure" in response.headers["set-cookie"]


async def test_pages_carry_the_form_headers_and_posts_need_csrf_and_this_site(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    call = start_call(gateway.url, {"message": "Ship it?", "schema": APPROVAL, "uiType": "web"})
    form = await call.form_url()
    hf_id = form.rsplit("/", 1)[1].split(".")[0]
    async with signed_in(gateway.url, key) as client:
        page = await client.get(f"/inbox/{hf_id}")
        assert page.status_code == 200 and "Ship it?" in page.text
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
        nonce = csp.split("'nonce-", 1)[1].split("'", 1)[0]
        assert page.text.count(f'nonce="{nonce}"') == 2  # the one style and the one script
        assert (page.headers["x-frame-options"], page.headers["cache-control"]) == ("DENY", "no-store")
        token = csrf_of(page.text)
        answer = {"hg-action": "accept", "f.approved": ["false", "true"], "f.note": "ok"}
        assert (await client.post(f"/inbox/{hf_id}", data=answer)).status_code == 403  # no token
        cross = await client.post(
            f"/inbox/{hf_id}", data=answer | {"hg-csrf": token}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert cross.status_code == 403
        invalid = await client.post(f"/inbox/{hf_id}", data=answer | {"hg-csrf": token})
        assert invalid.status_code == 422
        assert "must be at least 3 characters" in invalid.text and ">ok</textarea>" in invalid.text
        answered = await client.post(f"/inbox/{hf_id}", data=answer | {"hg-csrf": token, "f.note": "Go now"})
        assert answered.status_code == 303 and answered.headers["location"] == "/inbox?done=1"
        again = await client.post(f"/inbox/{hf_id}", data=answer | {"hg-csrf": token, "f.note": "Go now"})
        assert again.status_code == 409 and "Already answered by ada in the inbox" in again.text
    assert text_of(await call.result()) == 'User provided: {"approved":true,"note":"Go now"}'


async def test_an_inbox_answer_updates_the_slack_message(
    start_gateway: StartGateway, slack: FakeSlack, redis_url: str
) -> None:
    gateway = start_gateway(**slack.env())
    key = await create_key(redis_url, "ada")
    call = start_call(gateway.url, {"message": "Rotate the keys?", "schema": APPROVAL})  # slack
    (message,) = await slack.posted()
    hf_id = message["metadata"]["event_payload"]["hf_id"]
    async with signed_in(gateway.url, key) as client:
        token = csrf_of((await client.get(f"/inbox/{hf_id}")).text)
        data = {"hg-csrf": token, "hg-action": "decline", "hg-reason": "Not during the freeze"}
        assert (await client.post(f"/inbox/{hf_id}", data=data)).status_code == 303
    result = await call.result()
    assert text_of(result) == "User declined: Not during the freeze" and result.is_error
    update = await slack.updated()
    texts = json.dumps(update["blocks"])
    assert "Declined by ada in the inbox: Not during the freeze" in texts


async def test_revoking_the_key_or_signing_out_ends_the_session(
    start_gateway: StartGateway, redis_url: str
) -> None:
    gateway = start_gateway()
    key = await create_key(redis_url, "ada")
    async with signed_in(gateway.url, key) as client:
        inbox = await client.get("/inbox")
        assert "Signed in as" in inbox.text
        token = csrf_of(inbox.text)
        assert (await client.post("/inbox/sign-out", data={})).status_code == 403  # no CSRF token
        out = await client.post("/inbox/sign-out", data={"hg-csrf": token})
        assert out.status_code == 303 and 'hg_inbox=""' in out.headers["set-cookie"]
        assert "Operator key" in (await client.get("/inbox")).text
    async with signed_in(gateway.url, key) as client:
        await revoke_key(redis_url, "ada")
        assert "Operator key" in (await client.get("/inbox")).text
        assert (await client.get("/inbox/events")).status_code == 401


async def test_live_updates_come_from_any_process_and_streams_are_bounded(
    start_gateway: StartGateway, redis_url: str
) -> None:
    inbox_gateway = start_gateway(HUMANGATE_IDLE_TIMEOUT="30")
    agent_gateway = start_gateway(HUMANGATE_IDLE_TIMEOUT="30")
    key = await create_key(redis_url, "ada")
    async with (
        signed_in(inbox_gateway.url, key) as client,
        client.stream("GET", "/inbox/events") as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        updates = events_of(response)
        assert await asyncio.wait_for(anext(updates), WAIT) == ("snapshot", {"now": ANY, "requests": []})
        call = start_call(
            agent_gateway.url, {"prompt": "Name it?", "uiType": "web"}, tool="request_human_input"
        )
        name, added = await asyncio.wait_for(anext(updates), WAIT)
        assert (name, added["requester"], added["channel"], added["preview"]) == (
            "added",
            "anonymous",
            "web",
            "Name it?",
        )
        assert added["waitsForStart"] is True
        async with httpx.AsyncClient(timeout=WAIT) as browser:
            await browser.get(await call.form_url())  # a person opens the form on the other process
        name, extended = await asyncio.wait_for(anext(updates), WAIT)
        assert (
            name == "extended" and extended["id"] == added["id"] and extended["deadline"] > added["deadline"]
        )
        others = [client.stream("GET", "/inbox/events") for _ in range(MAX_STREAMS_PER_OPERATOR)]
        opened = [await stream.__aenter__() for stream in others]
        assert [r.status_code for r in opened] == [200] * (MAX_STREAMS_PER_OPERATOR - 1) + [429]
        for stream in others:
            await stream.__aexit__(None, None, None)
        async with httpx.AsyncClient(base_url=agent_gateway.url, timeout=WAIT) as rest:
            assert (await rest.delete(f"/v1/requests/{added['id']}")).status_code == 200
        name, ended = await asyncio.wait_for(anext(updates), WAIT)
        assert (name, ended) == (
            "ended",
            {"id": added["id"], "status": "canceled", "text": "Withdrawn by the agent"},
        )
    assert text_of(await call.result()) == "User canceled: Request canceled by the agent"


async def test_only_an_approving_operator_answers_and_the_link_alone_answers_nothing(
    start_gateway: StartGateway, redis_url: str, tmp_path: Path
) -> None:
    """docs/policies.md#approvers: another operator is refused (403) and nothing changes; the form
    link cannot answer a request with approvers (no web sign-in); the approver's answer ends it."""
    policy = tmp_path / "humangate.toml"
    policy.write_text('[policies.gated]\napprovers = ["operator:alice"]\n')
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(policy))
    bo, alice = await create_key(redis_url, "bo"), await create_key(redis_url, "alice")
    call = start_call(gateway.url, {"message": "Export the data?", "schema": APPROVAL, "uiType": "web"})
    form_url = await call.form_url()
    hf_id = form_url.rsplit("/", 1)[1].split(".")[0]
    answer = {"hg-action": "accept", "f.approved": "true"}

    link = await post_form(form_url, answer)
    assert link.status_code == 403 and "This request cannot be answered with its link alone." in link.text
    assert "You are not an approver" not in link.text  # the link names no one: nobody was identified
    async with httpx.AsyncClient(timeout=WAIT) as browser:
        page = await browser.get(form_url)
    assert page.status_code == 403 and "Only operator:alice may answer." in page.text
    assert "no sign-in for the web form" in page.text

    async with signed_in(gateway.url, bo) as client:
        shown = await client.get(f"/inbox/{hf_id}")
        assert "Only operator:alice may answer." in shown.text
        refused = await client.post(f"/inbox/{hf_id}", data=answer | {"hg-csrf": csrf_of(shown.text)})
        assert refused.status_code == 403 and "You are not an approver for this request." in refused.text
    async with signed_in(gateway.url, alice) as client:
        shown = await client.get(f"/inbox/{hf_id}")  # still pending: nothing changed
        assert 'name="hg-action"' in shown.text
        done = await client.post(f"/inbox/{hf_id}", data=answer | {"hg-csrf": csrf_of(shown.text)})
        assert done.status_code == 303
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    assert result.structured_content is not None
    assert result.structured_content["answeredBy"] == {
        "channel": "inbox",
        "id": "operator:alice",
        "name": "alice",
    }
    logs = gateway.output()
    assert "refused an inbox answer" in logs and "by=operator:bo: not an approver" in logs
    assert "answered hf=" in logs and "by=operator:alice" in logs and "inbox:operator:" not in logs

    # The request's page lists its audit trail, in order: who was refused, who opened it, who answered.
    async with signed_in(gateway.url, alice) as client:
        shown = await client.get(f"/inbox/{hf_id}")
    rows = re.findall(
        r'<li><time datetime="([^"]+)">[^<]*</time> <strong>(\w+)</strong>(?: · ([^<]*))?</li>', shown.text
    )
    assert [(event, details) for _, event, details in rows] == [
        ("created", "caller: anonymous:127.0.0.1 · policy: gated · channels: web"),
        ("refused", "who: form link · where: web · why: not_approver"),
        ("opened", "who: operator:bo · where: inbox"),
        ("refused", "who: operator:bo · where: inbox · why: not_approver"),
        ("opened", "who: operator:alice · where: inbox"),
        ("ended", "outcome: accepted · who: operator:alice · name: alice · where: inbox"),
    ]
    assert [at for at, _, _ in rows] == sorted(at for at, _, _ in rows)
