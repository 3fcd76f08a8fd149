"""The Teams client against the fake Bot Connector, token endpoint and OpenID metadata."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from channels.base import RenderContext
from channels.teams import connector
from channels.teams.auth import SigningKeys
from channels.teams.card import MAX_ACTIVITY_BYTES, render_card
from channels.teams.channel import TeamsChannel
from channels.teams.connector import MAX_RETRY_WAIT, TeamsClient, TooLargeError, failure, retry_wait
from schemas.errors import DeliveryError, SignatureError
from schemas.settings import Settings
from tests.channels.teams.flows import APPROVAL
from tests.channels.teams.test_card import hf_of
from tests.fakes.teams import CONVERSATION, KID, FakeTeams, card_of

CTX = RenderContext(form_url="https://hg.example/f/x.y", now=0.0)


@pytest.fixture
def teams() -> Iterator[FakeTeams]:
    fake = FakeTeams()
    with fake.server.running():
        yield fake
    connector._tokens.clear()


def settings_of(teams: FakeTeams, **extra: str) -> Settings:
    """Settings as the environment of ``teams.env(**extra)`` gives them."""
    fields: dict[str, Any] = {
        name.removeprefix("HUMANGATE_").lower(): value for name, value in teams.env(**extra).items()
    }
    return Settings(_env_file=None, **fields)


@pytest.fixture
async def client(teams: FakeTeams) -> AsyncIterator[TeamsClient]:
    async with TeamsChannel().connect(settings_of(teams)) as opened:
        yield opened


def test_retry_waits_honour_retry_after_else_back_off_with_jitter() -> None:
    assert retry_wait("2.5", 0) == 2.5 and retry_wait("-1", 3) == 0.0
    assert all(0 <= retry_wait(None, 2) <= 2.0 for _ in range(50))
    assert all(0 <= retry_wait("soon", 0) <= 0.5 for _ in range(50))


def status(code: int, error: str = "") -> httpx.Response:
    body = {"error": {"code": error, "message": "x"}} if error else {}
    return httpx.Response(code, json=body, request=httpx.Request("POST", "http://teams/"))


def test_failures_are_retryable_only_when_nothing_can_have_been_posted() -> None:
    assert isinstance(
        failure(status(413, "MessageSizeTooBig"), "post the card", "c", post=True), TooLargeError
    )
    for code in (429, 412, 502, 504):
        assert failure(status(code), "post the card", "c", post=True).retryable
    assert not failure(status(500), "post the card", "c", post=True).retryable
    assert failure(status(500), "update the card", "c", post=False).retryable
    assert "add the app to that team" in str(failure(status(403), "post the card", "19:x", post=True))
    assert "check HUMANGATE_TEAMS_CONVERSATION" in str(
        failure(status(404), "post the card", "19:x", post=True)
    )
    assert "TEAMS_APP_PASSWORD" in str(failure(status(401), "post the card", "19:x", post=True))


async def test_a_post_and_an_edit_carry_the_card_and_one_token(teams: FakeTeams, client: TeamsClient) -> None:
    card = render_card(hf_of(APPROVAL), CTX)
    activity_id = await client.post(card, "Approve?")
    await client.edit(CONVERSATION, activity_id, card, "Approved")
    (stored,) = teams.stored()
    assert stored["id"] == activity_id and card_of(stored) == card and stored["summary"] == "Approved"
    assert len(teams.server.calls_to(teams.token_url.removeprefix(teams.server.url))) == 1
    assert await client.members() == 2


async def test_backoff_gives_up_on_a_long_retry_after(teams: FakeTeams, client: TeamsClient) -> None:
    wait = str(MAX_RETRY_WAIT + 1)
    teams.server.script(
        "POST", teams.activities_path(), 429, {"error": {"code": "Throttled"}}, headers={"Retry-After": wait}
    )
    with pytest.raises(DeliveryError) as failed:
        await client.post(render_card(hf_of(APPROVAL), CTX), "x")
    assert failed.value.retryable and len(teams.post_calls()) == 1 and teams.stored() == []


async def test_a_card_refused_as_too_large_is_posted_short(teams: FakeTeams, client: TeamsClient) -> None:
    teams.server.script("POST", teams.activities_path(), 413, {"error": {"code": "MessageSizeTooBig"}})
    refs = await TeamsChannel().deliver(hf_of(APPROVAL), CTX, client)
    (stored,) = teams.stored()
    assert refs == {"conversation": CONVERSATION, "activity_id": stored["id"]}
    assert card_of(stored)["actions"][0]["url"] == CTX.form_url and MAX_ACTIVITY_BYTES > 0


async def test_an_unreachable_connector_is_retryable(teams: FakeTeams) -> None:
    settings = settings_of(teams, HUMANGATE_TEAMS_SERVICE_URL="http://127.0.0.1:9/teams/")
    async with TeamsChannel().connect(settings) as client:
        with pytest.raises(DeliveryError) as failed:
            await client.post(render_card(hf_of(APPROVAL), CTX), "x")
    assert failed.value.retryable and "cannot reach Teams" in str(failed.value)


async def test_keys_are_fetched_from_the_jwks_the_metadata_names(
    teams: FakeTeams, client: TeamsClient
) -> None:
    keys = SigningKeys()
    await client.refresh_keys(keys, KID, 1000.0)
    await client.refresh_keys(keys, KID, 1001.0)  # known kid: nothing fetched
    assert list(keys.keys) == [KID] and keys.issuer == "https://api.botframework.com"
    assert teams.key_fetches() == 1
    teams.server.script("GET", "/botframework/v1/.well-known/keys", 503)
    with pytest.raises(SignatureError, match="cannot fetch the signing keys"):
        await client.refresh_keys(SigningKeys(), KID, 0.0)


async def test_check_reports_what_to_fix(teams: FakeTeams) -> None:
    channel = TeamsChannel()
    assert await channel.check(settings_of(teams)) == []
    problems = await channel.check(settings_of(teams, TEAMS_APP_ID="not-the-app"))
    assert problems == [
        "Microsoft refused the bot's token (unauthorized_client): TEAMS_APP_ID is not an app of tenant "
        "TEAMS_TENANT_ID: copy both from the Azure Bot's Configuration page"
    ]
    dead = settings_of(teams, HUMANGATE_TEAMS_OPENID_URL="http://127.0.0.1:9/openid")
    assert (await channel.check(dead))[0].startswith(
        "HUMANGATE_TEAMS_OPENID_URL: cannot fetch the signing keys"
    )
