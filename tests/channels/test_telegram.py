"""Telegram through real processes: a ``humangate serve`` gateway (with its worker) reading the fake
Bot API by long polling under its lease, the official MCP client asking, and people tapping and
replying in the fake chat. Approve; 429s waited out (a short one in place, a long one by the delivery
job's retry); decline with a reason; a five-field form with one invalid reply; a multiple choice's
check marks; a non-approver's tap and an anonymous admin; a step escalating from Slack to Telegram;
the poller's holder SIGKILLed while taps arrive. (The webhook mode runs the channel contract,
tests/channels/test_contract.py, and ``test_the_webhook_applies_a_repeated_update_once`` below.)
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from channels.approvers import NOT_AN_APPROVER
from channels.telegram.updates import ANONYMOUS
from schemas.settings import Settings
from tests.conftest import StartGateway
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import ADA, BO, CY, TOKEN, FakeTelegram, rate_limited
from tests.gateway.flows import start_call

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Service", "minLength": 2},
        "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
        "canary": {"type": "boolean", "title": "Canary first"},
        "region": {"type": "string", "title": "Region", "enum": ["eu", "us"]},
        "note": {"type": "string", "title": "Note"},
    },
    "required": ["name", "replicas", "canary", "region"],
}
WAIT = 30.0


def request_message(fake: FakeTelegram, words: str) -> Any:
    """The request's own message (it has buttons and no reply_to), once posted."""
    return fake.message_where(lambda m: words in m["text"] and m["reply_to"] is None)


def question(fake: FakeTelegram, words: str, after: int = 0) -> Any:
    """The first message sent after message ``after`` whose text contains ``words``."""
    return fake.message_where(lambda m: m["message_id"] > after and words in m["text"])


def policy(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "telegram.toml"
    path.write_text(text)
    return path


async def test_approve_by_long_polling(start_gateway: StartGateway, telegram: FakeTelegram) -> None:
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": "Deploy <b>v2</b>?", "schema": APPROVAL, "uiType": "telegram"})
    posted = await request_message(telegram, "Deploy <b>v2</b>?")
    assert "&lt;b&gt;v2&lt;/b&gt;" in posted["html"]  # the agent's text is escaped, never markup
    assert telegram.method_calls("deleteWebhook")  # polling starts by removing any webhook
    tap = telegram.tap(posted, "Approve", ADA)
    result = await call.result()
    assert not result.is_error
    assert (result.structured_content or {})["answeredBy"] == {
        "channel": "telegram",
        "id": "111111",
        "name": "Ada",
    }
    told = await telegram.answer_to(tap["callback_query"]["id"])
    assert told["text"].startswith("Recorded: Approved by Ada (111111)")
    ended = await telegram.message_where(
        lambda m: m["message_id"] == posted["message_id"] and "Approved by Ada (111111)" in m["text"]
    )
    assert ended["reply_markup"] == {"inline_keyboard": []}  # its buttons are gone
    late = telegram.tap(posted, "Approve", BO)  # a late tap (on the old keyboard) is told how it ended
    assert (await telegram.answer_to(late["callback_query"]["id"]))["text"] == (
        "This request has already ended: Approved by Ada (111111)."
    )


async def test_a_short_429_is_waited_out_and_the_message_posted_once(
    start_gateway: StartGateway, telegram: FakeTelegram
) -> None:
    telegram.server.script("POST", f"/bot{TOKEN}/sendMessage", 429, rate_limited(1))
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": "Wait a second?", "schema": APPROVAL, "uiType": "telegram"})
    await request_message(telegram, "Wait a second?")
    first, second = telegram.method_calls("sendMessage")
    assert second.at - first.at >= 1.0  # no sooner than retry_after
    assert len([m for m in telegram.sent() if "Wait a second?" in m["text"]]) == 1
    call.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call.task


async def test_a_long_429_retries_the_delivery_after_retry_after_and_posts_once(
    start_gateway: StartGateway, telegram: FakeTelegram
) -> None:
    """Longer than a call waits in place: the delivery fails retryably and its job is retried no
    sooner than ``retry_after`` (not at the first of the fixed retry intervals, 1 s)."""
    telegram.server.script("POST", f"/bot{TOKEN}/sendMessage", 429, rate_limited(8))
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": "Later?", "schema": APPROVAL, "uiType": "telegram"})
    await request_message(telegram, "Later?")
    first, second = telegram.method_calls("sendMessage")
    assert second.at - first.at >= 8.0
    assert len([m for m in telegram.sent() if "Later?" in m["text"]]) == 1
    call.task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call.task


async def test_decline_with_a_reason(start_gateway: StartGateway, telegram: FakeTelegram) -> None:
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": "Drop the table?", "schema": APPROVAL, "uiType": "telegram"})
    posted = await request_message(telegram, "Drop the table?")
    telegram.tap(posted, "Decline", BO)
    asked = await question(telegram, "Why are you declining?")
    assert asked["reply_markup"]["force_reply"] is True and asked["reply_to"] == posted["message_id"]
    telegram.reply(asked, "too risky on a Friday", BO)
    result = await call.result()
    assert result.content[0].text == "User declined: too risky on a Friday"  # type: ignore[union-attr]
    await telegram.message_where(
        lambda m: (
            m["message_id"] == posted["message_id"] and "Declined by Bo (222222): too risky" in m["text"]
        )
    )


async def test_a_five_field_form_with_one_invalid_reply(
    start_gateway: StartGateway, telegram: FakeTelegram
) -> None:
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": "Scale it?", "schema": FORM, "uiType": "telegram"})
    posted = await request_message(telegram, "Scale it?")
    telegram.tap(posted, "Respond", ADA)
    first = await question(telegram, "Service (1 of 5)")
    telegram.reply(first, "api", ADA)
    second = await question(telegram, "Replicas (2 of 5)")
    telegram.reply(second, "42", ADA)
    again = await question(
        telegram, "Not recorded: Replicas must be at most 10. Try again.", second["message_id"]
    )
    assert "Replicas (2 of 5)" in again["text"]
    telegram.reply(again, "3", ADA)
    third = await question(telegram, "Canary first (3 of 5)")
    telegram.tap(third, "Yes", ADA)
    fourth = await question(telegram, "Region (4 of 5)")
    telegram.tap(fourth, "us", ADA)
    fifth = await question(telegram, "Note (5 of 5, optional)")
    telegram.reply(fifth, "/skip", ADA)
    summary = await question(telegram, "Your answer")
    assert "Replicas: 3" in summary["text"] and "Note: No answer" in summary["text"]
    telegram.tap(summary, "Submit", ADA)
    result = await call.result()
    assert json.loads(result.content[0].text.removeprefix("User provided: ")) == {  # type: ignore[union-attr]
        "name": "api",
        "replicas": 3,
        "canary": True,
        "region": "us",
    }


async def test_a_multiple_choice_shows_what_is_chosen_as_the_person_taps(
    start_gateway: StartGateway, telegram: FakeTelegram
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "regions": {
                "type": "array",
                "title": "Regions",
                "items": {"type": "string", "enum": ["eu", "us", "ap"]},
            },
            "why": {"type": "string", "title": "Why"},
        },
        "required": ["regions"],
    }
    gateway = start_gateway(**telegram.env())
    call = start_call(gateway.url, {"message": "Where to?", "schema": schema, "uiType": "telegram"})
    posted = await request_message(telegram, "Where to?")
    telegram.tap(posted, "Respond", ADA)
    asked = await question(telegram, "Regions (1 of 2)")

    def titles(message: dict[str, Any]) -> list[str]:
        return [button["text"] for row in message["reply_markup"]["inline_keyboard"] for button in row]

    def redrawn(chosen: list[str]) -> Any:
        wanted = [("\u2705 " if r in chosen else "") + r for r in ("eu", "us", "ap")]
        return telegram.message_where(
            lambda m: m["message_id"] == asked["message_id"] and titles(m)[:3] == wanted
        )

    assert titles(asked)[:3] == ["eu", "us", "ap"]
    telegram.tap(asked, "eu", ADA)
    shown = await redrawn(["eu"])
    telegram.tap(shown, "ap", ADA)
    shown = await redrawn(["eu", "ap"])
    telegram.tap(shown, "\u2705 eu", ADA)  # tapped again: no longer chosen
    shown = await redrawn(["ap"])
    telegram.tap(shown, "Done", ADA)
    why = await question(telegram, "Why (2 of 2, optional)")
    telegram.reply(why, "/skip", ADA)
    summary = await question(telegram, "Your answer")
    telegram.tap(summary, "Submit", ADA)
    result = await call.result()
    assert json.loads(result.content[0].text.removeprefix("User provided: ")) == {  # type: ignore[union-attr]
        "regions": ["ap"]
    }


async def test_a_non_approver_and_an_anonymous_admin_change_nothing(
    start_gateway: StartGateway, telegram: FakeTelegram, tmp_path: Path
) -> None:
    path = policy(tmp_path, f'[policies.gated]\napprovers = ["telegram:{BO.id}"]\n')
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **telegram.env())
    call = start_call(gateway.url, {"message": "Rotate keys?", "schema": APPROVAL, "uiType": "telegram"})
    posted = await request_message(telegram, "Rotate keys?")
    assert f"Only telegram:{BO.id} may answer" in posted["text"]
    refused = telegram.tap(posted, "Approve", ADA)
    alert = await telegram.answer_to(refused["callback_query"]["id"])
    assert alert == {
        "callback_query_id": refused["callback_query"]["id"],
        "text": NOT_AN_APPROVER,
        "show_alert": True,
    }
    telegram.reply(posted, "approve", ADA, sender_chat=True)  # posted as the group: names nobody
    said = await question(telegram, "cannot tell who you are", posted["message_id"])
    assert said["text"].startswith(ANONYMOUS)
    assert not call.task.done() and telegram.edits_of(posted["message_id"]) == []
    telegram.tap(posted, "Approve", BO)
    result = await call.result()
    assert (result.structured_content or {})["answeredBy"] == {
        "channel": "telegram",
        "id": "222222",
        "name": "Bo",
    }


async def test_a_step_escalates_from_slack_to_telegram(
    start_gateway: StartGateway, telegram: FakeTelegram, slack: FakeSlack, tmp_path: Path
) -> None:
    text = (
        "[policies.esc]\n"
        '[[policies.esc.steps]]\nafter = 0\nchannel = "slack"\n'
        f'[[policies.esc.steps]]\nafter = 1\nchannel = "telegram"\nmention = ["telegram:{CY.id}"]\n'
    )
    gateway = start_gateway(
        HUMANGATE_POLICY_FILE=str(policy(tmp_path, text)), **slack.env(), **telegram.env()
    )
    call = start_call(gateway.url, {"message": "Page on-call?", "schema": APPROVAL, "uiType": "slack"})
    await slack.posted()
    posted = await request_message(telegram, "Page on-call?")
    assert f'<a href="tg://user?id={CY.id}">telegram:{CY.id}</a>' in posted["html"]  # a text mention
    telegram.tap(posted, "Approve", CY)
    result = await call.result()
    assert (result.structured_content or {})["answeredBy"]["channel"] == "telegram"
    await slack.updated(lambda args: "Approved by Cy" in json.dumps(args.get("blocks")))
    await telegram.message_where(
        lambda m: m["message_id"] == posted["message_id"] and "Approved by Cy" in m["text"]
    )


async def test_the_webhook_applies_a_repeated_update_once(
    start_gateway: StartGateway, telegram: FakeTelegram
) -> None:
    gateway = start_gateway(**telegram.env(webhook=True))
    call = start_call(gateway.url, {"message": "Ship it?", "schema": APPROVAL, "uiType": "telegram"})
    posted = await request_message(telegram, "Ship it?")
    assert telegram.webhook is not None and telegram.webhook["secret_token"]
    update = telegram.numbered(telegram.tap_update(posted, "Decline", ADA))
    assert (
        await asyncio.to_thread(telegram.deliver_webhook, gateway.url, update, "wrong")
    ).status_code == 401
    for _ in range(2):  # Telegram sends it again when unsure: the reason is asked once
        response = await asyncio.to_thread(telegram.deliver_webhook, gateway.url, update)
        assert response.status_code == 200, response.text
    asked = await question(telegram, "Why are you declining?")
    assert len([m for m in telegram.sent() if "Why are you declining?" in m["text"]]) == 1
    reply = telegram.numbered(telegram.reply_update(asked, "/skip", ADA))
    assert (await asyncio.to_thread(telegram.deliver_webhook, gateway.url, reply)).status_code == 200
    result = await call.result()
    assert result.content[0].text.startswith("User declined")  # type: ignore[union-attr]


@pytest.mark.slow
async def test_the_poller_killed_while_taps_arrive_loses_none_and_applies_none_twice(
    start_gateway: StartGateway, telegram: FakeTelegram, settings: Settings
) -> None:
    env = {"HUMANGATE_API_KEYS": "bot:k-bot", **telegram.env()}
    gateways = [start_gateway(**env), start_gateway(**env)]
    bot = {"Authorization": "Bearer k-bot"}
    count = 12
    async with httpx.AsyncClient(base_url=gateways[0].url, headers=bot, timeout=WAIT) as client:
        ids = []
        for n in range(count):
            body = {"message": f"Deploy v{n}?", "schema": APPROVAL, "uiType": "telegram"}
            created = await client.post("/v1/requests", json=body)
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        posts = [await request_message(telegram, f"Deploy v{n}?") for n in range(count)]
        taps = [telegram.tap(posts[n], "Approve", ADA) for n in range(count // 2)]
        await telegram.answer_to(taps[0]["callback_query"]["id"])  # the poller is reading them
        with redis.Redis.from_url(settings.redis_url or "") as sync:
            pid = int(sync.hget("hg:lease:telegram:0", "pid") or 0)
        assert pid
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        killed_at = time.monotonic()
        taps += [telegram.tap(posts[n], "Approve", ADA) for n in range(count // 2, count)]
        for tap in taps:
            await telegram.answer_to(tap["callback_query"]["id"])
        took = time.monotonic() - killed_at
        survivor = next(g for g in gateways if g.process.poll() is None)
        client.base_url = httpx.URL(survivor.url)
        for hf_id in ids:
            view = (await client.get(f"/v1/requests/{hf_id}")).json()
            assert view["status"] == "accepted", view
            events = (await client.get(f"/v1/requests/{hf_id}/events")).json()["events"]
            assert [e["event"] for e in events].count("ended") == 1
    assert took < 30  # takeover (<= 12 s) plus the taps answered
