"""Adding a channel is one package and one registry line: a small channel defined here, registered
in ``channels.registry.CHANNELS`` and nowhere else, gets a request delivered by the worker's jobs,
its endpoint mounted by a real gateway app (body limit, signature check, desk), and its verified
answer recorded and shown. Nothing under ``gateway/`` knows of it."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.base import Connected, Desk, Endpoint, Inbound, Opening, RenderContext
from channels.registry import CHANNELS, body_limits
from gateway.core.callers import ANONYMOUS_CALLER
from gateway.core.redis_client import async_redis
from schemas.errors import InvalidAnswerError, SignatureError
from schemas.models import Action, Answer, HumanFunction, Person, Status
from schemas.settings import Settings
from tests.channels.inprocess import serving, work

SECRET = b"carrier-pigeon-secret"
"""The extra platform's signing secret (a real channel reads its secret from the settings)."""

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


def sign(body: bytes) -> dict[str, str]:
    return {"x-carrier-signature": hmac.new(SECRET, body, hashlib.sha256).hexdigest()}


@dataclass
class Outbox:
    """The extra platform's client: what it posted and how each post looks now."""

    posts: dict[str, dict[str, Any]] = field(default_factory=dict)


async def carrier_answers(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """The extra platform's one endpoint: a verified answer, recorded through the desk."""
    payload = json.loads(inbound.body)
    hf = await desk.get(str(payload["hf_id"]))
    ended = await desk.answer(hf, CarrierChannel().parse(hf, payload))
    return JSONResponse({"status": ended.status.value})


class CarrierChannel:
    """A platform that posts JSON to an outbox and receives HMAC-signed JSON answers."""

    name = "carrier"
    title = "Carrier"
    posts = True
    edits = True

    def missing_settings(self, settings: Settings) -> list[str]:
        return []

    def endpoints(self) -> list[Endpoint]:
        return [Endpoint("/carrier/answers", ("POST",), carrier_answers, body_limit=2048, what="an answer")]

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> None:
        self.verify(inbound.headers, inbound.body, desk.now(), desk.settings)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        if not hmac.compare_digest(headers.get("x-carrier-signature", ""), sign(body)["x-carrier-signature"]):
            raise SignatureError("X-Carrier-Signature does not match the body")

    def render(self, hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
        return {"text": hf.message, "status": hf.status.value, "form": ctx.form_url}

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        user = payload.get("user")
        return Person(channel=self.name, id=str(user["id"]), name=str(user["name"])) if user else None

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        person = self.identity(payload)
        if person is None:
            raise InvalidAnswerError({"": "the answer names no user"})
        by = f"{person.name} ({person.id})"
        return Answer(action=Action.ACCEPT, content=payload["content"], by=by, via=self.name, person=person)

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[Outbox]:
        yield OUTBOX

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        client.posts[hf.id] = self.render(hf, ctx)
        return {"post": hf.id}

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        return {"post": hf.id} if hf.id in client.posts else None

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        client.posts[str(hf.refs["post"])] = self.render(hf, ctx)

    def openings(self, settings: Settings) -> list[Opening]:
        """One connection of ours to the platform, over which answers arrive too."""
        return [Opening("carrier", 1, "pigeon loft", SOCKET.run)]

    async def check(self, settings: Settings) -> list[str]:
        return []


OUTBOX = Outbox()


@dataclass
class Loft:
    """The extra platform's connection: answers pushed into it reach the desk the gateway gave it."""

    arrived: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    held_on: list[str] = field(default_factory=list)
    answered: asyncio.Queue[str] = field(default_factory=asyncio.Queue)

    async def run(self, held: Connected, desk: Desk) -> None:
        self.held_on.append(held.slot)
        while True:
            payload = await self.arrived.get()
            held.touch()
            hf = await desk.get(str(payload["hf_id"]))
            ended = await desk.answer(hf, CarrierChannel().parse(hf, payload))
            await self.answered.put(ended.status.value)


SOCKET = Loft()


@pytest.fixture
def carrier(monkeypatch: pytest.MonkeyPatch) -> Iterator[CarrierChannel]:
    """The one line that adds the channel: its entry in the registry."""
    channel = CarrierChannel()
    monkeypatch.setitem(CHANNELS, channel.name, channel)
    OUTBOX.posts.clear()
    yield channel


async def test_a_channel_added_by_one_registry_line_delivers_and_is_answered(
    settings: Settings, carrier: CarrierChannel
) -> None:
    assert body_limits()["/carrier/answers"] == 2048
    async with serving(settings) as (runtime, client):
        hf, _ = await runtime.service.open(ANONYMOUS_CALLER, "carrier", "Deploy v2?", APPROVAL)
        await asyncio.to_thread(work, settings, "carrier")
        assert OUTBOX.posts[hf.id]["text"] == "Deploy v2?" and OUTBOX.posts[hf.id]["status"] == "pending"

        answer = {"hf_id": hf.id, "content": {"approved": True}, "user": {"id": "u-7", "name": "Ada"}}
        body = json.dumps(answer).encode()
        forged = await client.post("/carrier/answers", content=body, headers={"x-carrier-signature": "00"})
        assert forged.status_code == 401 and forged.json()["error"] == "SignatureError"
        huge = json.dumps({**answer, "pad": "x" * 4096}).encode()
        too_large = await client.post("/carrier/answers", content=huge, headers=sign(huge))
        assert too_large.status_code == 413 and too_large.json()["error"] == "RequestTooLarge"
        assert (await runtime.store.get(hf.id)).is_pending

        answered = await client.post("/carrier/answers", content=body, headers=sign(body))
        assert answered.status_code == 200 and answered.json() == {"status": "accepted"}
        ended = await runtime.store.get(hf.id)
        assert ended.status is Status.ACCEPTED and ended.outcome is not None
        assert ended.outcome.content == {"approved": True}
        assert (ended.outcome.by, ended.outcome.via) == ("Ada (u-7)", "carrier")

        await asyncio.to_thread(work, settings, "carrier")
        assert OUTBOX.posts[hf.id]["status"] == "accepted"


async def test_a_channel_s_own_connection_is_held_under_a_lease_and_answers_through_its_desk(
    settings: Settings, carrier: CarrierChannel
) -> None:
    global SOCKET
    SOCKET = Loft()
    async with serving(settings) as (runtime, _):
        hf, _ = await runtime.service.open(ANONYMOUS_CALLER, "carrier", "Deploy v2?", APPROVAL)
        answer = {"hf_id": hf.id, "content": {"approved": True}, "user": {"id": "u-7", "name": "Ada"}}
        await SOCKET.arrived.put(answer)
        assert await asyncio.wait_for(SOCKET.answered.get(), 30) == "accepted"
        assert SOCKET.held_on == ["carrier:0"]
        ended = await runtime.store.get(hf.id)
        assert ended.outcome is not None and (ended.outcome.by, ended.outcome.via) == ("Ada (u-7)", "carrier")
        assert await runtime.redis.exists("hg:lease:carrier:0") == 1
    assert await _lease_exists(settings) is False  # released when the gateway stopped


async def _lease_exists(settings: Settings) -> bool:
    client = async_redis(settings.redis_url or "")
    try:
        return bool(await client.exists("hg:lease:carrier:0"))
    finally:
        await client.aclose()
