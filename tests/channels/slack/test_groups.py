"""Slack approvers (docs/policies.md#approvers): a user id, or a user group read with
``usergroups.users.list`` from the fake Slack API and kept at most 60 s; a failed look-up refuses."""

from __future__ import annotations

from typing import Any, cast

from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Desk
from channels.slack.client import SlackClient
from channels.slack.groups import GROUP_CACHE_SECONDS, may_answer
from schemas.models import HumanFunction
from schemas.settings import Settings
from tests.channels.slack.test_channel import make_hf
from tests.fakes.slack import FakeSlack

LOOKUPS = "/api/usergroups.users.list"


class GroupDesk:
    """The part of a ``Desk`` the check uses: this channel's state, a clock the test moves, the client."""

    def __init__(self, fake: FakeSlack) -> None:
        self.state: dict[str, Any] = {}
        self.clock = 1000.0
        api = AsyncWebClient(token=fake.token, base_url=fake.api_url, timeout=5)
        self._client = SlackClient(api=api, target="C123")
        self.settings = Settings(_env_file=None)

    def now(self) -> float:
        return self.clock

    async def client(self) -> SlackClient:
        return self._client


async def allowed(desk: GroupDesk, hf: HumanFunction, user_id: str) -> bool:
    return await may_answer(cast(Desk, desk), hf, user_id)


def gated(*approvers: str) -> HumanFunction:
    return make_hf().model_copy(update={"approvers": list(approvers)})


async def test_a_user_id_is_enough_and_asks_slack_nothing(slack: FakeSlack) -> None:
    desk = GroupDesk(slack)
    hf = gated("slack:U1", "slack:group:S0ONCALL")
    assert await allowed(desk, hf, "U1")
    assert await allowed(desk, gated(), "U3")  # no approvers: anyone
    assert slack.server.calls_to(LOOKUPS) == []


async def test_group_members_are_read_once_and_kept_at_most_60_seconds(slack: FakeSlack) -> None:
    desk = GroupDesk(slack)
    hf = gated("slack:group:S0ONCALL")
    assert await allowed(desk, hf, "U2")
    assert not await allowed(desk, hf, "U3")
    (lookup,) = slack.server.calls_to(LOOKUPS)
    assert lookup.args()["usergroup"] == "S0ONCALL"

    slack.groups["S0ONCALL"] = ["U3"]  # the on-call rota changes
    desk.clock += GROUP_CACHE_SECONDS - 1
    assert await allowed(desk, hf, "U2")  # still the kept members
    assert len(slack.server.calls_to(LOOKUPS)) == 1
    desk.clock += 1
    assert await allowed(desk, hf, "U3")
    assert not await allowed(desk, hf, "U2")
    assert len(slack.server.calls_to(LOOKUPS)) == 2


async def test_a_group_slack_cannot_read_refuses(slack: FakeSlack) -> None:
    desk = GroupDesk(slack)
    assert not await allowed(desk, gated("slack:group:SNOSUCH"), "U2")
    slack.scopes = "chat:write,users:read"  # an app installed without usergroups:read
    assert not await allowed(desk, gated("slack:group:S0ONCALL"), "U2")
    assert len(slack.server.calls_to(LOOKUPS)) == 2
