"""The JWT matrix of ``/teams/messages`` against a real gateway: every token Bot Framework would not
have signed is a 401 (never a 500), and the OpenID keys are fetched once, not per request."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from gateway.core.embedded import free_port
from tests.channels.teams.flows import APPROVAL, ask
from tests.conftest import StartGateway
from tests.fakes.teams import ADA, APP_ID, KID, OTHER_KEY, FakeTeams
from tests.fakes.teams_activities import base, invoke, send

ELEVEN_MINUTES = 660


def mention(teams: FakeTeams) -> dict[str, Any]:
    """A message that mentions the bot: authentic activities that are not clicks get an empty 200."""
    activity = base(teams, "message", "1", ADA)
    activity["text"] = "<at>humangate</at> hello"
    return activity


def unsigned(payload: dict[str, Any]) -> str:
    """A token with ``alg: none`` (no signature at all)."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': KID})}.{part(payload)}."


async def test_every_forged_stale_or_misdirected_token_is_a_401(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    activity = mention(teams)
    now = int(time.time())
    cases: dict[str, dict[str, Any]] = {
        "the Authorization header is missing": {"headers": {}},
        "must be 'Bearer <token>'": {"headers": {"Authorization": f"Basic {teams.sign(activity)}"}},
        "not a JWT": {"token": "not-a-jwt"},
        "only RS256 is accepted": {"token": teams.sign(activity, algorithm="HS256")},
        "'none'; only RS256": {"token": unsigned({"iss": "https://api.botframework.com", "aud": APP_ID})},
        "signature does not verify": {"token": teams.sign(activity, key=OTHER_KEY)},
        "audience (aud) is not TEAMS_APP_ID": {"token": teams.sign(activity, aud="someone-else")},
        "issuer (iss) is not": {"token": teams.sign(activity, iss="https://evil.example")},
        "token expired": {"token": teams.sign(activity, exp=now - ELEVEN_MINUTES)},
        "has no exp claim": {"token": teams.sign(activity, exp=None)},
        "not valid yet": {"token": teams.sign(activity, nbf=now + ELEVEN_MINUTES)},
        "serviceurl claim is not the activity's": {"token": teams.sign(activity, serviceurl="https://evil/")},
        "has no serviceurl claim": {"token": teams.sign(activity, serviceurl=None)},
        "not endorsed for channel 'slack'": {
            "activity": activity | {"channelId": "slack"},
            "token": teams.sign(activity),
        },
    }
    for expected, how in cases.items():
        sent = how.get("activity", activity)
        response = await send(gateway.url, teams, sent, token=how.get("token"), headers=how.get("headers"))
        assert response.status_code == 401, (expected, response.text)
        assert expected in response.json()["detail"], (expected, response.json())
    not_json = await send(gateway.url, teams, b"{not json", token=teams.sign(activity))
    assert not_json.status_code == 401 and "not JSON" in not_json.json()["detail"]
    assert "Traceback" not in gateway.output()

    within_skew = await send(gateway.url, teams, activity, token=teams.sign(activity, exp=now - 120))
    assert within_skew.status_code == 200 and within_skew.content == b""
    assert teams.key_fetches() == 1


async def test_keys_are_fetched_once_per_unknown_kid_and_a_token_is_not_a_replay(
    start_gateway: StartGateway, teams: FakeTeams
) -> None:
    gateway = start_gateway(**teams.env())
    activity = mention(teams)
    unknown = teams.sign(activity, kid="rotated-key", key=OTHER_KEY)
    for _ in range(3):
        response = await send(gateway.url, teams, activity, token=unknown)
        assert response.status_code == 401 and "'rotated-key' is not in the JWKS" in response.json()["detail"]
    assert teams.key_fetches() == 1
    # Bot Framework reuses one token for many activities: the same token twice is fine.
    token = teams.sign(activity)
    assert (await send(gateway.url, teams, activity, token=token)).status_code == 200
    assert (await send(gateway.url, teams, mention(teams), token=token)).status_code == 200
    assert teams.key_fetches() == 1


async def test_unreachable_keys_are_a_401(start_gateway: StartGateway, teams: FakeTeams) -> None:
    dead = f"http://127.0.0.1:{free_port()}/openidconfiguration"
    gateway = start_gateway(**teams.env(HUMANGATE_TEAMS_OPENID_URL=dead))
    response = await send(gateway.url, teams, mention(teams))
    assert response.status_code == 401 and "cannot fetch the signing keys" in response.json()["detail"]


@pytest.mark.parametrize("verb", ["Approve", "Cancel"])
async def test_a_click_with_a_bad_token_changes_nothing(
    start_gateway: StartGateway, teams: FakeTeams, verb: str
) -> None:
    gateway = start_gateway(**teams.env())
    call, posted = await ask(gateway, teams, "Forge me", APPROVAL)
    click = invoke(teams, posted, verb)
    response = await send(gateway.url, teams, click, token=teams.sign(click, aud="another-bot"))
    assert response.status_code == 401
    assert (
        not call.task.done() and teams.server.calls_to(teams.activities_path(str(posted["id"])), "PUT") == []
    )
    call.task.cancel()
