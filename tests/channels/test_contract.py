"""One contract, run over every registered channel, through a real gateway app and the worker's jobs
against the platform's fake: a request is delivered (a posting channel posts it once), its message
is updated on every outcome, a verified answer is recorded with who gave it, a callback with a bad
signature is refused (401; the web form, which has none, refuses a cross-site post with 403), a
body over the endpoint's limit is refused (413), and the channel reads the verified ``Person``.

A channel added to ``channels.registry`` must get a driver here: the test fails until it has one.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from channels.approvers import FORM_LINK, NOT_AN_APPROVER
from channels.base import Endpoint
from channels.registry import CHANNELS
from channels.web.form import CANNOT_ANSWER_HERE
from gateway.core.audit import trail, who_of
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.runtime import Runtime
from schemas.models import Action, Answer, HumanFunction, Person, Status
from schemas.policies import parse_policies
from schemas.results import structured_result
from schemas.settings import Settings, override_settings
from tests.channels.inprocess import serving, work
from tests.fakes import discord_interactions, slack_callbacks, teams_activities
from tests.fakes.discord import ADA as DISCORD_ADA
from tests.fakes.discord import CY, REVIEWERS_ROLE, FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.smtp import FakeSmtp
from tests.fakes.teams import ADA as TEAMS_ADA
from tests.fakes.teams import BO as TEAMS_BO
from tests.fakes.teams import FakeTeams, dumps
from tests.fakes.telegram import ADA as TELEGRAM_ADA
from tests.fakes.telegram import BO as TELEGRAM_BO
from tests.fakes.telegram import SECRET as TELEGRAM_SECRET
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram import User as TelegramUser

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
WAIT = 30.0
ENDINGS = (Status.DECLINED, Status.CANCELED, Status.EXPIRED)
"""The outcomes besides the verified answer's (accepted) that every posted message must show."""


@dataclass
class Signed:
    """A callback as the platform sends it: its body, its signature headers, and other headers."""

    body: bytes
    signature: dict[str, str]
    headers: dict[str, str]
    payload: Any
    """The callback as the channel reads it (``Channel.identity``'s argument)."""


class Driver:
    """What the contract needs of one platform's fake: its settings, its posts, a signed answer."""

    name: str
    answered_on = ""
    """The channel whose endpoint takes the answer (and its ``via``): the driver's own unless set."""
    person: Person | None
    """Who the driver's answer comes from, as the platform vouches for them."""

    def env(self) -> dict[str, str]:
        return {}

    async def post_of(self, hf: HumanFunction) -> Any:
        """The message delivered for ``hf`` (``None`` for a channel that posts nothing)."""
        return None

    def updates_of(self, hf: HumanFunction, post: Any) -> int:
        """How many times ``post`` was updated."""
        return 0

    def approve(self, hf: HumanFunction, post: Any) -> Signed:
        raise NotImplementedError

    def forged(self, signed: Signed) -> dict[str, str]:
        """``signed``'s headers with a signature the platform never made."""
        raise NotImplementedError


class SlackDriver(Driver):
    name = "slack"
    person = Person(channel="slack", id="U1", name="ada")

    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake

    def env(self) -> dict[str, str]:
        return self.fake.env()

    async def post_of(self, hf: HumanFunction) -> Any:
        return next(m for m in self.fake.stored() if m["ts"] == hf.refs["ts"])

    def updates_of(self, hf: HumanFunction, post: Any) -> int:
        calls = self.fake.server.calls_to("/api/chat.update")
        return sum(1 for call in calls if call.json().get("ts") == post["ts"])

    def approve(self, hf: HumanFunction, post: Any) -> Signed:
        payload = slack_callbacks.click(post, "hg:approve", "U1", self.fake.url)
        body = slack_callbacks.form_body(payload)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        return Signed(body, slack_callbacks.sign(body), form, payload)

    def forged(self, signed: Signed) -> dict[str, str]:
        return slack_callbacks.sign(signed.body, secret="not-the-signing-secret")


class DiscordDriver(Driver):
    name = "discord"
    person = Person(channel="discord", id=DISCORD_ADA.id, name=DISCORD_ADA.name)

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def env(self) -> dict[str, str]:
        return self.fake.env()

    async def post_of(self, hf: HumanFunction) -> Any:
        return next(m for m in self.fake.stored() if m["id"] == hf.refs["message_id"])

    def updates_of(self, hf: HumanFunction, post: Any) -> int:
        return len(self.fake.edit_calls(str(post["id"])))

    def approve(self, hf: HumanFunction, post: Any) -> Signed:
        payload = discord_interactions.click(post, discord_interactions.buttons(post)["Approve"])
        body = json.dumps(payload).encode()
        return Signed(body, discord_interactions.sign(body), {"Content-Type": "application/json"}, payload)

    def forged(self, signed: Signed) -> dict[str, str]:
        return discord_interactions.sign(signed.body + b" ")


class TeamsDriver(Driver):
    name = "teams"
    person = Person(channel="teams", id=TEAMS_ADA.aad_id, name=TEAMS_ADA.name)

    def __init__(self, fake: FakeTeams) -> None:
        self.fake = fake

    def env(self) -> dict[str, str]:
        return self.fake.env()

    async def post_of(self, hf: HumanFunction) -> Any:
        posted = await self.fake.posted(len(self.fake.originals))
        return next(a for a in posted if a["id"] == hf.refs["activity_id"])

    def updates_of(self, hf: HumanFunction, post: Any) -> int:
        return len(self.fake.server.calls_to(self.fake.activities_path(str(post["id"])), "PUT"))

    def approve(self, hf: HumanFunction, post: Any) -> Signed:
        activity = teams_activities.invoke(self.fake, post, "Approve")
        signature = {"Authorization": f"Bearer {self.fake.sign(activity)}"}
        return Signed(dumps(activity), signature, {"Content-Type": "application/json"}, activity)

    def forged(self, signed: Signed) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.fake.sign(signed.payload, aud='another-bot')}"}


class TelegramDriver(Driver):
    """Telegram in webhook mode: the contract POSTs updates to ``/telegram/updates`` with the secret
    header (long polling reaches the same handler: tests/channels/test_telegram.py)."""

    name = "telegram"
    person = Person(channel="telegram", id=str(TELEGRAM_ADA.id), name=TELEGRAM_ADA.first_name)

    def __init__(self, fake: FakeTelegram) -> None:
        self.fake = fake

    def env(self) -> dict[str, str]:
        return self.fake.env(webhook=True)

    async def post_of(self, hf: HumanFunction) -> Any:
        return self.fake.messages[int(hf.refs["message_id"])]

    def updates_of(self, hf: HumanFunction, post: Any) -> int:
        return len(self.fake.edits_of(int(post["message_id"])))

    def approve(self, hf: HumanFunction, post: Any) -> Signed:
        return self.tap(post, TELEGRAM_ADA)

    def tap(self, post: Any, user: TelegramUser) -> Signed:
        update = self.fake.numbered(self.fake.tap_update(post, "Approve", user))
        secret = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
        return Signed(json.dumps(update).encode(), secret, {"Content-Type": "application/json"}, update)

    def forged(self, signed: Signed) -> dict[str, str]:
        return {"X-Telegram-Bot-Api-Secret-Token": "not-the-secret"}


class WebDriver(Driver):
    """The hosted form: it posts nothing, its link is the capability, and no platform vouches for
    whoever answers (its ``Person`` is ``None``)."""

    name = "web"
    person = None

    def __init__(self, public_url: str) -> None:
        self.public_url = public_url

    def approve(self, hf: HumanFunction, post: Any) -> Signed:
        body = httpx.QueryParams({"hg-action": "accept", "f.approved": "true"})
        form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": self.public_url}
        return Signed(str(body).encode(), {}, form, {})

    def forged(self, signed: Signed) -> dict[str, str]:
        return {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}


class EmailDriver(WebDriver):
    """Email only tells: the request is emailed and answered on its web form (so as ``WebDriver``),
    and its outcome is a reply in the request's thread."""

    name = "email"
    answered_on = "web"

    def __init__(self, fake: FakeSmtp, public_url: str) -> None:
        super().__init__(public_url)
        self.fake = fake

    def env(self) -> dict[str, str]:
        return self.fake.env()

    async def post_of(self, hf: HumanFunction) -> Any:
        (sent,) = [r for r in self.fake.received if r.header("Message-ID") == hf.refs["message_id"]]
        return {"message_id": sent.header("Message-ID"), "text": sent.text, "html": sent.html}

    def updates_of(self, hf: HumanFunction, post: Any) -> int:
        return sum(1 for r in self.fake.received if r.header("In-Reply-To") == post["message_id"])


DRIVERS: dict[str, Callable[[pytest.FixtureRequest, Settings], Driver]] = {
    "slack": lambda request, _: SlackDriver(request.getfixturevalue("slack")),
    "discord": lambda request, _: DiscordDriver(request.getfixturevalue("discord")),
    "teams": lambda request, _: TeamsDriver(request.getfixturevalue("teams")),
    "web": lambda _, settings: WebDriver(settings.public_url),
    "telegram": lambda request, _: TelegramDriver(request.getfixturevalue("telegram")),
    "email": lambda request, settings: EmailDriver(request.getfixturevalue("smtp"), settings.public_url),
}
"""How to drive each registered channel's fake (the conftest fixtures of the same names)."""


@pytest.fixture(params=list(CHANNELS))
def driver(request: pytest.FixtureRequest, settings: Settings) -> Driver:
    name: str = request.param
    assert name in DRIVERS, f"channel {name!r} is registered but the contract test has no driver for it"
    return DRIVERS[name](request, settings)


async def wait_until(check: Callable[[], Awaitable[bool]]) -> None:
    """Return once ``check()`` holds; fail after ``WAIT`` seconds (Slack's listeners run after the ack)."""
    deadline = time.monotonic() + WAIT
    while not await check():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.02)


async def ended(runtime: Runtime, hf_id: str) -> HumanFunction:
    """``hf_id`` once it has ended (Slack's listeners record the answer after the ack)."""

    async def check() -> bool:
        return not (await runtime.store.get(hf_id)).is_pending

    await wait_until(check)
    return await runtime.store.get(hf_id)


def answering_endpoint(name: str) -> Endpoint:
    return next(endpoint for endpoint in CHANNELS[name].endpoints() if "POST" in endpoint.methods)


@asynccontextmanager
async def open_gateway(
    driver: Driver, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Runtime, httpx.AsyncClient, Settings]]:
    """A real gateway app (in this process) whose settings point the channel at its fake."""
    for key, value in driver.env().items():
        monkeypatch.setenv(key, value)
    configured = Settings(redis_url=settings.redis_url, data_dir=settings.data_dir, _env_file=None)
    override_settings(configured)
    async with serving(configured) as (runtime, client):
        yield runtime, client, configured


async def test_every_registered_channel_keeps_the_contract(
    driver: Driver, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_gateway(driver, settings, monkeypatch) as (runtime, client, configured):
        await keeps_the_contract(driver, runtime, client, configured)


async def keeps_the_contract(
    driver: Driver, runtime: Runtime, client: httpx.AsyncClient, settings: Settings
) -> None:
    channel = CHANNELS[driver.name]
    assert channel.missing_settings(settings) == []
    endpoint = answering_endpoint(driver.answered_on or driver.name)

    # Delivered: a posting channel posts each request once and records where.
    opened = [
        (await runtime.service.open(ANONYMOUS_CALLER, driver.name, f"Deploy v{n}?", APPROVAL))[0]
        for n in range(1 + len(ENDINGS))
    ]
    await asyncio.to_thread(work, settings, driver.name)
    hfs = [await runtime.store.get(hf.id) for hf in opened]
    posts = [await driver.post_of(hf) for hf in hfs]
    if channel.posts:
        assert all(hf.refs for hf in hfs) and all(post is not None for post in posts)
    else:
        assert not any(hf.refs for hf in hfs)

    target = hfs[0]
    path = endpoint.path.replace("{token}", target.form_token)
    signed = driver.approve(target, posts[0])

    # Refused before anything is recorded: a bad signature, then an oversized body.
    forged = await client.post(path, content=signed.body, headers=signed.headers | driver.forged(signed))
    assert forged.status_code == (401 if endpoint.signed else 403), forged.text
    huge = b"x" * (endpoint.body_limit + 1)
    too_large = await client.post(path, content=huge, headers=signed.headers | signed.signature)
    assert too_large.status_code == 413
    assert (await runtime.store.get(target.id)).is_pending

    # The identity the platform vouches for, then the verified answer recorded with it.
    assert channel.identity(signed.payload) == driver.person
    answered = await client.post(path, content=signed.body, headers=signed.headers | signed.signature)
    assert answered.status_code < 400, answered.text

    accepted = await ended(runtime, target.id)
    assert accepted.status is Status.ACCEPTED and accepted.outcome is not None
    via = driver.answered_on or driver.name
    assert accepted.outcome.via == via and accepted.outcome.content == {"approved": True}
    if driver.person is not None:
        assert driver.person.id in (accepted.outcome.by or "")

    # Every other outcome, and each message updated to show its own.
    declined, canceled, expired = hfs[1:]
    await runtime.service.answer(
        declined, Answer(action=Action.DECLINE, reason="No", by="Bo", via=driver.name)
    )
    await runtime.service.answer(canceled, Answer(action=Action.CANCEL, by="the agent", via="agent"))
    await runtime.service.expire(expired)
    await asyncio.to_thread(work, settings, driver.name)
    statuses = [(await runtime.store.get(hf.id)).status for hf in hfs]
    assert statuses == [Status.ACCEPTED, *ENDINGS]
    if channel.posts:
        assert all(driver.updates_of(hf, post) >= 1 for hf, post in zip(hfs, posts, strict=True))


# Approvers (docs/policies.md#approvers): a request whose policy names approvers is answered only by
# them; anyone else is refused privately and nothing changes. Each driver answers as two people the
# platform vouches for, the approver and someone else, and says how the refusal looked.


APPROVERS: dict[str, list[str]] = {
    "slack": ["slack:group:S0ONCALL"],  # U2 is in the fake's group, U3 is not
    "discord": [f"discord:role:{REVIEWERS_ROLE}"],  # Cy has the role, Ada not
    "teams": [f"teams:{TEAMS_BO.aad_id.upper()}"],  # Bo, written in upper case
    "web": ["operator:alice"],
    "telegram": [f"telegram:{TELEGRAM_BO.id}"],
    "email": ["email:ada@example.org"],
}
"""The policy's approvers per channel, naming the driver's approver (by group, role or id)."""


REFUSED = {
    "slack": "slack:U3",
    "discord": f"discord:user:{DISCORD_ADA.id}",
    "teams": f"teams:{TEAMS_ADA.aad_id}",
    "web": FORM_LINK,
    "telegram": f"telegram:{TELEGRAM_ADA.id}",
    "email": FORM_LINK,
}
"""Who the audit trail says was refused: the someone else of ``as_person``, as policies name people."""


def target_of(driver: Driver, settings: Settings) -> object:
    """Where the channel posts a request without a policy target: its configured default."""
    setting = CHANNELS[driver.name].target_setting
    return None if setting is None else getattr(settings, setting)


def as_person(driver: Driver, hf: HumanFunction, post: Any, approver: bool) -> Signed:
    """``driver``'s Approve, clicked by its approver or by someone else."""
    if isinstance(driver, SlackDriver):
        payload = slack_callbacks.click(post, "hg:approve", "U2" if approver else "U3", driver.fake.url)
        body = slack_callbacks.form_body(payload)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        return Signed(body, slack_callbacks.sign(body), form, payload)
    if isinstance(driver, DiscordDriver):
        user = CY if approver else DISCORD_ADA
        payload = discord_interactions.click(post, discord_interactions.buttons(post)["Approve"], user=user)
        body = json.dumps(payload).encode()
        return Signed(body, discord_interactions.sign(body), {"Content-Type": "application/json"}, payload)
    if isinstance(driver, TeamsDriver):
        member = TEAMS_BO if approver else TEAMS_ADA
        activity = teams_activities.invoke(driver.fake, post, "Approve", user=member)
        signature = {"Authorization": f"Bearer {driver.fake.sign(activity)}"}
        return Signed(dumps(activity), signature, {"Content-Type": "application/json"}, activity)
    if isinstance(driver, TelegramDriver):
        return driver.tap(post, TELEGRAM_BO if approver else TELEGRAM_ADA)
    return driver.approve(hf, post)  # the web form: a link answers for nobody


async def refused_privately(driver: Driver, response: httpx.Response) -> None:
    """The refusal reached only the person who acted, and says they are not an approver (on a
    platform that identified them) or that the link alone cannot answer (the web form)."""
    if isinstance(driver, SlackDriver):
        (reply,) = await driver.fake.replies(1)  # the response_url: ephemeral
        assert reply["response_type"] == "ephemeral" and reply["text"] == NOT_AN_APPROVER
        assert reply["replace_original"] is False
    elif isinstance(driver, DiscordDriver):
        data = response.json()["data"]
        assert data["flags"] & 64 and data["content"] == NOT_AN_APPROVER
    elif isinstance(driver, TeamsDriver):
        reply = response.json()
        assert reply["type"] == "application/vnd.microsoft.card.adaptive"
        assert NOT_AN_APPROVER in json.dumps(reply["value"])
    elif isinstance(driver, TelegramDriver):
        query = json.loads(response.request.content)["callback_query"]
        alert = await driver.fake.answer_to(query["id"])
        assert alert["show_alert"] is True and alert["text"] == NOT_AN_APPROVER
    else:  # the form's link names no one: it cannot answer, and nobody is called "not an approver"
        assert response.status_code == 403 and CANNOT_ANSWER_HERE in response.text
        assert NOT_AN_APPROVER not in response.text


async def test_only_approvers_answer_on_every_channel(
    driver: Driver, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_gateway(driver, settings, monkeypatch) as (runtime, client, configured):
        runtime.service.policies = parse_policies(
            f"[policies.gated]\napprovers = {json.dumps(APPROVERS[driver.name])}\n", "test.toml"
        )
        hf, _ = await runtime.service.open(ANONYMOUS_CALLER, driver.name, "Deploy v9?", APPROVAL)
        assert hf.approvers == APPROVERS[driver.name]
        await asyncio.to_thread(work, configured, driver.name)
        hf = await runtime.store.get(hf.id)
        assert hf.approvers == APPROVERS[driver.name]  # kept in the stored document
        post = await driver.post_of(hf)
        if CHANNELS[driver.name].posts:
            only = f"Only {', '.join(APPROVERS[driver.name])} may answer"
            assert only in json.dumps(post)  # the post says who may answer
        where = driver.answered_on or driver.name
        path = answering_endpoint(where).path.replace("{token}", hf.form_token)

        # Someone else: refused privately, nothing changes.
        other = as_person(driver, hf, post, approver=False)
        response = await client.post(path, content=other.body, headers=other.headers | other.signature)
        await refused_privately(driver, response)
        refusal = {
            "event": "refused",
            "who": REFUSED[driver.name],
            "where": where,
            "why": "not_approver",
        }
        assert [{k: v for k, v in e.items() if k != "at"} for e in await trail(runtime.redis, hf.id)] == [
            {
                "event": "created",
                "caller": ANONYMOUS_CALLER.identity,
                "policy": "gated",
                "channels": [driver.name],
            },
            *(
                [
                    {
                        "event": "posted",
                        "channel": driver.name,
                        "target": target_of(driver, configured),
                        "step": 0,
                    }
                ]
                if CHANNELS[driver.name].posts
                else []
            ),
            refusal,
        ]
        still = await runtime.store.get(hf.id)
        assert still.is_pending and still.outcome is None and still.deadline == hf.deadline
        if CHANNELS[driver.name].posts:
            await asyncio.to_thread(work, configured, driver.name)
            assert driver.updates_of(hf, post) == 0

        # The approver: their answer ends it, and the result says who they are.
        mine = as_person(driver, hf, post, approver=True)
        response = await client.post(path, content=mine.body, headers=mine.headers | mine.signature)
        if where == "web":  # no sign-in on this gateway: the link answers for nobody
            assert response.status_code == 403 and (await runtime.store.get(hf.id)).is_pending
            page = await client.get(path)
            only = f"Only {', '.join(APPROVERS[driver.name])} may answer"
            assert page.status_code == 403 and only in page.text
            return
        assert response.status_code < 400, response.text

        accepted = await ended(runtime, hf.id)
        assert accepted.status is Status.ACCEPTED and accepted.outcome is not None
        person = CHANNELS[driver.name].identity(mine.payload)
        assert person is not None and accepted.outcome.person == person
        answered = structured_result(accepted.outcome, hf.id)["answeredBy"]
        assert answered == {"channel": driver.name, "id": person.id, "name": person.name}
        last = (await trail(runtime.redis, hf.id))[-1]
        assert (last["event"], last["outcome"], last["where"]) == ("ended", "accepted", driver.name)
        assert last["who"] == who_of(person, None) and last["answer"] == {"approved": True}
