"""What a policy does to a new request (docs/policies.md#applying): its channel, target, timeout and
limits in place of the caller's, and the file it is read from."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr
from redis.asyncio import Redis

from gateway.core.callers import ANONYMOUS_CALLER, Caller
from gateway.core.policies import apply_policy, load_policies, policy_path
from gateway.core.queue import JobRecorder
from gateway.core.service import HumanFunctionService
from gateway.core.store import HumanFunctionStore, Opened
from schemas.errors import InvalidRequestError, PolicyRefusedError
from schemas.policies import Policies, PolicyFileError, parse_policies
from schemas.settings import Settings

POLICIES = parse_policies(
    """\
[policies.deploys]
callers = ["deploy-bot"]
timeout = 900
channels = ["teams", "slack", "web"]
rate_limit = 7
[policies.deploys.targets]
slack = "C0DEPLOYS"

[policies.anyone]
callers = ["anonymous"]
max_pending = 2
"""
)
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
BOT = Caller("deploy-bot", authenticated=True)
OTHER = Caller("other-bot", authenticated=True)
SLACK = {
    "slack_bot_token": SecretStr("xoxb-1"),
    "slack_signing_secret": SecretStr("s"),
    "slack_channel": "C123",
}


def settings(**fields: object) -> Settings:
    """Settings with ``fields`` and nothing from the environment or an env file."""
    return Settings.model_validate(fields)


def test_without_policies_the_caller_decides_everything() -> None:
    applied = apply_policy(Policies(), BOT, None, settings())
    assert (applied.policy, applied.channel, applied.target) == (None, "web", None)
    assert (applied.timeout, applied.rate_limit, applied.max_pending) == (300, 60, 100)
    assert apply_policy(Policies(), BOT, "slack", settings()).channel == "slack"


def test_a_policy_sets_the_timeout_limits_and_target() -> None:
    applied = apply_policy(POLICIES, BOT, "slack", settings(**SLACK))
    assert applied.policy is not None and applied.policy.name == "deploys"
    assert (applied.channel, applied.target) == ("slack", "C0DEPLOYS")
    assert (applied.timeout, applied.rate_limit, applied.max_pending) == (900, 7, 100)
    web = apply_policy(POLICIES, BOT, "web", settings(**SLACK))
    assert (web.channel, web.target) == ("web", None)


def test_what_a_policy_leaves_out_stays_the_callers() -> None:
    applied = apply_policy(POLICIES, ANONYMOUS_CALLER, "discord", settings())
    assert applied.policy is not None and applied.policy.name == "anyone"
    assert (applied.channel, applied.target) == ("discord", None)
    assert (applied.timeout, applied.rate_limit, applied.max_pending) == (180, 20, 2)
    assert apply_policy(POLICIES, OTHER, "teams", settings()).policy is None


def test_a_channel_the_policy_does_not_allow_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(PolicyRefusedError) as refused:
        apply_policy(POLICIES, BOT, "discord", settings())
    assert str(refused.value) == (
        "uiType: policy 'deploys' does not allow channel 'discord'; allowed channels: teams, slack, web"
    )


def test_without_uitype_the_default_channel_or_the_policys_first_configured_one() -> None:
    assert apply_policy(POLICIES, BOT, None, settings(**SLACK)).channel == "slack"  # the default
    assert apply_policy(POLICIES, BOT, None, settings(default_channel="discord")).channel == "web"
    assert apply_policy(POLICIES, BOT, None, settings(**SLACK, default_channel="discord")).channel == "slack"


def test_a_named_policy_must_exist_and_apply_to_the_caller() -> None:
    assert apply_policy(POLICIES, ANONYMOUS_CALLER, "web", settings(), "anyone").policy is not None
    with pytest.raises(InvalidRequestError, match=r"^policy: no policy named 'nope'$"):
        apply_policy(POLICIES, BOT, "web", settings(), "nope")
    with pytest.raises(
        PolicyRefusedError, match=r"^policy: policy 'deploys' does not apply to caller 'other-bot'$"
    ):
        apply_policy(POLICIES, OTHER, "web", settings(), "deploys")


def test_the_file_is_humangate_toml_when_nothing_else_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert policy_path(settings()) is None
    assert load_policies(settings()).policies == ()
    (tmp_path / "humangate.toml").write_text("[policies.a]\ntimeout = 60\n")
    assert load_policies(settings()).names == ["a"]
    other = tmp_path / "other.toml"
    other.write_text("[policies.b]\n")
    assert load_policies(settings(policy_file=other)).names == ["b"]


def test_a_policy_file_that_is_not_there_is_a_mistake(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError) as raised:
        load_policies(settings(policy_file=tmp_path / "missing.toml"))
    assert str(raised.value) == f"{tmp_path / 'missing.toml'} has 1 mistake(s):\n  there is no such file"


async def test_a_request_keeps_its_policy_and_target_and_is_found_again(settings: Settings) -> None:
    configured = settings.model_copy(update=SLACK)
    assert configured.redis_url is not None
    redis = Redis.from_url(configured.redis_url)
    service = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), configured, policies=POLICIES)
    try:
        hf, opened = await service.open(BOT, None, "Deploy?", APPROVAL)
        assert opened is Opened.CREATED
        stored = await service.store.get(hf.id)
        assert (stored.channel, stored.policy, stored.target) == ("slack", "deploys", "C0DEPLOYS")
        assert stored.deadline - stored.created_at == 900
        # What the inline form app's answer_request looks the request up by.
        assert await service.store.attached(service.attach_key(BOT, None, "Deploy?", APPROVAL)) == hf.id
        assert await service.store.attached(service.attach_key(BOT, "slack", "Deploy?", APPROVAL)) == hf.id
        plain = HumanFunctionService(HumanFunctionStore(redis), JobRecorder(), configured)
        other, _ = await plain.open(BOT, "slack", "Deploy?", APPROVAL)  # without the policy: another request
        assert other.id != hf.id and (other.policy, other.target) == (None, None)
    finally:
        await redis.aclose()
