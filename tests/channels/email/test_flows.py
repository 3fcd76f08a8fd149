"""Email end to end, through real processes: a ``humangate serve`` gateway, ``humangate worker``
processes, a real SMTP server on loopback (``tests/fakes/smtp.py``) and, for sign-in, the local
OpenID provider (``tests/oidc.py``). A request is emailed, its link opened (nothing answers), a
reminder and the outcome come as replies in its thread; a Slack request escalates to email; an SMTP
server that is down is retried until it is back, and a 5xx refusal is not retried."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import httpx

from gateway.core.embedded import free_port
from tests.conftest import StartGateway, StartWorker
from tests.fakes.slack import FakeSlack
from tests.fakes.smtp import RECIPIENTS, SENDER, FakeSmtp, Received
from tests.gateway.flows import WAIT
from tests.oidc import Provider

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean", "title": "Approved"}},
    "required": ["approved"],
}
HOSTILE = 'Spend <b>$5,000</b> on GPUs? <script>alert("x")</script>\nSecond line'
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/f/[A-Za-z0-9._-]+)")


async def received(smtp: FakeSmtp, count: int) -> list[Received]:
    return await asyncio.to_thread(smtp.wait_for, count)


async def request_state(client: httpx.AsyncClient, hf_id: str, wanted: str) -> dict[str, Any]:
    """The request once its status is ``wanted``; fails after ``WAIT`` seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        view: dict[str, Any] = (await client.get(f"/v1/requests/{hf_id}")).json()
        if view["status"] == wanted:
            return view
        assert time.monotonic() < deadline, view
        await asyncio.sleep(0.05)


async def events(client: httpx.AsyncClient, hf_id: str) -> list[dict[str, Any]]:
    trail: list[dict[str, Any]] = (await client.get(f"/v1/requests/{hf_id}/events")).json()["events"]
    return trail


async def create(client: httpx.AsyncClient, channel: str, message: str = HOSTILE) -> str:
    created = await client.post(
        "/v1/requests", json={"message": message, "schema": APPROVAL, "uiType": channel}
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


async def test_an_emailed_request_is_answered_after_sign_in_and_its_thread_ends_with_the_outcome(
    start_gateway: StartGateway,
    start_worker: StartWorker,
    smtp: FakeSmtp,
    oidc_provider: Provider,
    tmp_path: Path,
) -> None:
    oidc_provider.add_person("ada", "ada@example.org", name="Ada")
    policy = tmp_path / "humangate.toml"
    policy.write_text(
        '[policies.gated]\napprovers = ["email:ada@example.org"]\nremind = [2]\ntimeout = 120\n'
    )
    port = free_port()
    env = oidc_provider.register(f"http://127.0.0.1:{port}/auth/callback")
    env |= smtp.env() | {"HUMANGATE_POLICY_FILE": str(policy)}
    gateway = start_gateway(port, worker=False, **env)
    worker = start_worker("email", HUMANGATE_PUBLIC_URL=gateway.url, **env)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf_id = await create(client, "email")

        # One email, to the configured recipients: both alternatives, the agent's words escaped.
        (first,) = await received(smtp, 1)
        assert first.sender == SENDER and first.recipients == [a.strip() for a in RECIPIENTS.split(",")]
        assert (
            first.header("Subject")
            == 'Input needed: Spend <b>$5,000</b> on GPUs? <script>alert("x")</script>'
        )
        assert first.header("Auto-Submitted") == "auto-generated"
        assert HOSTILE in first.text and "Only email:ada@example.org may answer" in first.text
        assert (
            "Replies to this email are not read" in first.text
            and "Approved: yes or no (required)" in first.text
        )
        html = first.html
        assert "<script" not in html and "&lt;script&gt;" in html and "&lt;b&gt;$5,000&lt;/b&gt;" in html
        assert "Replies to this email are not read" in html and "sign in" in html
        (link,) = set(LINK.findall(first.text))
        assert html.count(f'href="{link}"') == 2  # the button and the address under it
        assert link not in worker.output() and "Spend" not in worker.output()  # no capability in logs

        # Opening the link (as a mail scanner does) answers nothing: it asks for a sign-in.
        async with httpx.AsyncClient(timeout=WAIT) as scanner:
            opened = await scanner.get(link)
        assert opened.status_code == 303 and "/auth/sign-in" in opened.headers["location"]
        assert (await client.get(f"/v1/requests/{hf_id}")).json()["status"] == "pending"

        # The reminder: a reply in the thread, with the link again.
        reminder = (await received(smtp, 2))[1]
        assert reminder.header("In-Reply-To") == first.header("Message-ID")
        assert reminder.header("References") == first.header("Message-ID")
        assert reminder.header("Subject") == "Re: " + first.header("Subject")
        assert "Reminder: this request is still waiting" in reminder.text and link in reminder.text

        # Signed in as the approver, Ada answers on the form.
        path = httpx.URL(link).path
        async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as browser:
            asked = await browser.get(path)
            assert asked.status_code == 303
            to_provider = await browser.get(asked.headers["location"])
            assert to_provider.status_code == 303
            async with httpx.AsyncClient(timeout=WAIT) as at_provider:
                authorized = await at_provider.post(to_provider.headers["location"], data={"sub": "ada"})
            callback = httpx.URL(authorized.headers["location"])
            back = await browser.get(callback.path, params=callback.params)
            assert back.status_code == 303 and back.headers["location"] == path
            form = await browser.get(path)
            assert form.status_code == 200 and "ada@example.org" in form.text
            assert (await client.get(f"/v1/requests/{hf_id}")).json()["status"] == "pending"
            answered = await browser.post(path, data={"hg-action": "accept", "f.approved": "true"})
            assert answered.status_code == 303, answered.text

        view = await request_state(client, hf_id, "accepted")
        answered_by = view["result"]["structuredContent"]["answeredBy"]
        assert answered_by["name"] == "Ada" and "ada@example.org" in answered_by["id"]

        # The outcome: the thread's last message, sent once.
        outcome = (await received(smtp, 3))[2]
        assert outcome.header("In-Reply-To") == first.header("Message-ID")
        assert outcome.header("Subject") == "Re: " + first.header("Subject")
        assert "Approved by Ada (ada@example.org), " in outcome.text and "Approved: Yes" in outcome.text
        trail = await events(client, hf_id)
        names = [e["event"] for e in trail]
        assert names.count("posted") == 1 and "reminded" in names and names[-1] == "ended"
        assert trail[-1]["where"] == "web" and "ada@example.org" in trail[-1]["who"]
    worker.terminate()
    assert len(smtp.received) == 3 and len({r.connection for r in smtp.received}) == 1


async def test_a_slack_request_escalates_to_email_in_a_thread_of_its_own(
    start_gateway: StartGateway, start_worker: StartWorker, smtp: FakeSmtp, slack: FakeSlack, tmp_path: Path
) -> None:
    policy = tmp_path / "humangate.toml"
    policy.write_text(
        "[policies.escalate]\ntimeout = 120\n[policies.escalate.targets]\n"
        'email = "lead@example.org, cto@example.org"\n'
        '[[policies.escalate.steps]]\nafter = 0\nchannel = "slack"\n'
        '[[policies.escalate.steps]]\nafter = 1\nchannel = "email"\n'
    )
    env = slack.env() | smtp.env() | {"HUMANGATE_POLICY_FILE": str(policy)}
    gateway = start_gateway(worker=False, **env)
    start_worker("slack,email", HUMANGATE_PUBLIC_URL=gateway.url, **env)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf_id = await create(client, "slack", "Deploy v2?")
        await slack.posted(1)
        (step,) = await received(smtp, 1)
        assert step.recipients == ["lead@example.org", "cto@example.org"]
        assert step.header("Subject") == "Input needed: Deploy v2?" and not step.header("In-Reply-To")
        withdrawn = await client.delete(f"/v1/requests/{hf_id}")
        assert withdrawn.status_code == 200, withdrawn.text
        outcome = (await received(smtp, 2))[1]
        assert outcome.header("In-Reply-To") == step.header("Message-ID")
        assert outcome.recipients == step.recipients and "Withdrawn by the agent" in outcome.text
        trail = await events(client, hf_id)
        posted = [(e["channel"], e.get("step")) for e in trail if e["event"] == "posted"]
        assert posted == [("slack", 0), ("email", 1)]
        assert any(e["event"] == "escalated" and e["channel"] == "email" for e in trail)


async def test_a_server_that_is_down_gets_the_email_once_it_is_back(
    start_gateway: StartGateway, start_worker: StartWorker, tmp_path: Path
) -> None:
    smtp = FakeSmtp()  # not listening yet: every connection is refused
    gateway = start_gateway(worker=False, **smtp.env())
    start_worker("email", HUMANGATE_PUBLIC_URL=gateway.url, **smtp.env())
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        hf_id = await create(client, "email", "Rotate the keys?")
        deadline = time.monotonic() + WAIT
        while not (await client.get(f"/v1/requests/{hf_id}")).json()["delivery_error"]:
            assert time.monotonic() < deadline, "the failed attempt was not reported"
            await asyncio.sleep(0.05)
        note = (await client.get(f"/v1/requests/{hf_id}")).json()["delivery_error"]
        assert "cannot reach the SMTP server" in note and "retrying" in note
        with smtp:
            (sent,) = await received(smtp, 1)
            assert sent.header("Subject") == "Input needed: Rotate the keys?"
            deadline = time.monotonic() + WAIT
            while (await client.get(f"/v1/requests/{hf_id}")).json()["delivery_error"]:
                assert time.monotonic() < deadline, "the delivery note was not cleared"
                await asyncio.sleep(0.05)
            trail = await events(client, hf_id)
            assert [e["event"] for e in trail].count("posted") == 1
            assert len(smtp.received) == 1


async def test_a_permanent_refusal_gives_up_at_once(
    start_gateway: StartGateway, start_worker: StartWorker, tmp_path: Path
) -> None:
    with FakeSmtp(refuse={"gone@example.org": "550 5.1.1 No such user"}) as smtp:
        env = smtp.env(to="gone@example.org")
        gateway = start_gateway(worker=False, **env)
        worker = start_worker("email", HUMANGATE_PUBLIC_URL=gateway.url, **env)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
            hf_id = await create(client, "email", "Rotate the keys?")
            deadline = time.monotonic() + WAIT
            while not (note := (await client.get(f"/v1/requests/{hf_id}")).json()["delivery_error"]):
                assert time.monotonic() < deadline, "the refusal was not reported"
                await asyncio.sleep(0.05)
        assert "550" in note and "not retrying" in note and smtp.received == []
        assert worker.output().count("attempt 1") + worker.output().count("not retrying") >= 1
        assert "(attempt 2)" not in worker.output()
