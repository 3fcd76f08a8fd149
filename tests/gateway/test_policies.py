"""Policies through real processes (docs/policies.md): ``humangate policy check``, ``serve`` refusing
an invalid file, ``doctor`` checking targets, and a policy's timeout, channels, limits and target
applied to MCP and REST callers, with deliveries seen by the fake Slack."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path

import httpx
import pytest

from gateway.core.embedded import free_port
from tests.conftest import StartGateway, run_cli
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import CHANNEL, FakeSlack
from tests.fakes.teams import FakeTeams
from tests.gateway.flows import start_call
from tests.mcp_client import call_elicit
from tests.webhook_receiver import SECRET

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
TARGET = "C0DEPLOYS"
POLICY = f"""\
# Deploys: only from the deploy bot, in #deploys.
[policies.deploys]
callers     = ["deploy-bot"]
timeout     = 900
channels    = ["slack", "web"]
approvers   = ["slack:group:S0ONCALL", "operator:alice"]
max_pending = 1

[policies.deploys.targets]
slack = "{TARGET}"

[policies.anyone]
callers    = ["anonymous"]
rate_limit = 2
"""
INVALID = """\
[policies.deploys]
callers = ["deploy-bot"]
timeout = 0
channels = ["slack", "sms"]
[policies.deploys.targets]
slack = "#deploys"
"""
KEYS = "deploy-bot:k-deploy,other:k-other"
DISCORD_TARGET = "1300000000000000042"
TEAMS_TARGET = "19:deploys0123456789@thread.tacv2"


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policies.toml"
    path.write_text(POLICY)
    return path


@pytest.fixture
def invalid_file(tmp_path: Path) -> Path:
    path = tmp_path / "invalid.toml"
    path.write_text(INVALID)
    return path


@pytest.fixture
def deploys_channel(slack: FakeSlack) -> FakeSlack:
    """The fake Slack with #deploys, where the app is a member."""
    slack.channels[TARGET] = {"name": "deploys", "is_member": True, "is_private": False}
    return slack


def test_policy_check_names_the_line_and_field_of_each_mistake(invalid_file: Path, policy_file: Path) -> None:
    checked = run_cli("policy", "check", str(invalid_file), env={})
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == [
        f"{invalid_file}:3: policies.deploys.timeout: must be greater than 0",
        f"{invalid_file}:4: policies.deploys.channels[1]: 'sms' is not a channel; the channels are slack, "
        "discord, teams, web, telegram, email",
        f"{invalid_file}:6: policies.deploys.targets.slack: '#deploys' is not a channel id (like C0123ABCD) "
        "or a user id (like U0123ABCD)",
    ]
    assert checked.stderr.strip() == f"{invalid_file}: 3 mistake(s)"

    valid = run_cli("policy", "check", env={"HUMANGATE_POLICY_FILE": str(policy_file)})
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert valid.stdout.splitlines() == [
        f"{policy_file}: valid, 2 policies",
        f"  deploys: callers deploy-bot; timeout 900 s; channels slack, web; slack -> {TARGET}; "
        "2 approver(s); max pending 1",
        "  anyone: callers anonymous; rate limit 2/min",
    ]
    broken = run_cli("policy", "check", env={"HUMANGATE_POLICY_FILE": str(policy_file) + ".gone"})
    assert broken.returncode == 1
    assert broken.stdout == f"{policy_file}.gone: there is no such file\n"


def test_policy_check_names_the_line_of_each_malformed_tool_rule(tmp_path: Path) -> None:
    path = tmp_path / "tools.toml"
    path.write_text(
        "[policies.coding.tools]\n"
        'allow = ["Read", "Bash(npm test *)"]\n'
        "deny = [\n"
        '  "Bash(rm -rf *)",\n'
        '  "Edit(**/.env",\n'
        "]\n"
        'ask = ["mcp__github__x(y)"]\n'
    )
    checked = run_cli("policy", "check", str(path), env={})
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert checked.stdout.splitlines() == [
        f"{path}:5: policies.coding.tools.deny[1]: 'Edit(**/.env' is not a tool rule: missing ')' at the end",
        f"{path}:7: policies.coding.tools.ask[0]: 'mcp__github__x(y)' is not a tool rule: an MCP rule takes "
        "no specifier",
    ]
    assert checked.stderr.strip() == f"{path}: 2 mistake(s)"
    path.write_text(
        '[policies.coding.tools]\nallow = ["Read", "Bash(npm test *)"]\ndeny = ["Edit(**/.env)"]\n'
    )
    valid = run_cli("policy", "check", str(path), env={})
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert valid.stdout.splitlines() == [
        f"{path}: valid, 1 policy",
        "  coding: callers any; tool rules 2 allow, 0 ask, 1 deny",
    ]


def test_serve_refuses_an_invalid_policy_file(redis_url: str, invalid_file: Path) -> None:
    refused = run_cli(
        "serve",
        "--port",
        str(free_port()),
        env={"HUMANGATE_POLICY_FILE": str(invalid_file)},
        redis_url=redis_url,
    )
    assert refused.returncode == 2
    # The same lines as `humangate policy check`, each with its line.
    checked = run_cli("policy", "check", str(invalid_file), env={}).stdout.splitlines()
    shown = refused.stderr.splitlines()
    start = shown.index(f"humangate serve: not starting: {invalid_file} has 3 mistake(s):")
    assert shown[start + 1 : start + 5] == [*checked, "(check it with: humangate policy check)"]
    assert checked[0] == f"{invalid_file}:3: policies.deploys.timeout: must be greater than 0"
    assert "running on" not in refused.stderr + refused.stdout


UNWORKABLE = """[policies.forms]
channels  = ["web"]
remind    = [60]
approvers = ["operator:alice", "operator:nobody"]

[policies.deploys]
channels  = ["slack"]
remind    = [60]
[[policies.deploys.steps]]
after     = 0
channel   = "slack"
approvers = ["operator:ghost"]
"""


def test_policy_check_and_serve_warn_about_what_cannot_work(
    redis_url: str, tmp_path: Path, start_gateway: StartGateway
) -> None:
    path = tmp_path / "unworkable.toml"
    path.write_text(UNWORKABLE)
    assert run_cli("keys", "create", "alice", "--operator", env={}, redis_url=redis_url).returncode == 0
    assert run_cli("keys", "create", "nobody", env={}, redis_url=redis_url).returncode == 0  # not an operator
    warnings = [
        f"{path}:3: warning: policies.forms.remind: web posts nothing, so there is no thread to remind in: "
        "no reminder is ever sent",
        f"{path}:4: warning: policies.forms.approvers[1]: 'operator:nobody' names a caller key, not an "
        "operator key, so nobody can answer as it (a name is one key: humangate keys revoke nobody, then "
        "humangate keys create nobody --operator; or name an operator key)",
        f"{path}:12: warning: policies.deploys.steps[0].approvers[0]: 'operator:ghost' names no operator "
        "key, so nobody can answer as it (humangate keys create ghost --operator makes one)",
    ]
    checked = run_cli("policy", "check", str(path), env={}, redis_url=redis_url)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[0] == f"{path}: valid, 2 policies"
    assert checked.stderr.splitlines() == warnings

    # Without a Redis it says the operators were not checked, and warns of the rest.
    offline = run_cli("policy", "check", str(path), env={"HUMANGATE_DATA_DIR": str(tmp_path / "none")})
    assert offline.returncode == 0
    assert offline.stderr.splitlines() == [
        f"{path}: note: operator: approvers not checked against the operator keys (no Redis found)",
        warnings[0],
    ]

    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path))  # serve logs the same warnings, and runs
    for warning in warnings:
        assert warning in gateway.output(), gateway.output()


def test_doctor_checks_every_target(redis_url: str, deploys_channel: FakeSlack, tmp_path: Path) -> None:
    path = tmp_path / "targets.toml"
    path.write_text(
        POLICY
        + '\n[policies.elsewhere]\napprovers = ["email:ada@example.com"]\n'
        + '[policies.elsewhere.targets]\nslack = "COUT"\ndiscord = "123"\n'
        + f'[[webhooks]]\nurl = "http://127.0.0.1:9/hook"\nsecret = "{SECRET}"\n'
    )
    doctor = run_cli("doctor", redis_url=redis_url, env=deploys_channel.env(HUMANGATE_POLICY_FILE=str(path)))
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    lines = doctor.stdout.splitlines()
    assert f"[ok  ] policies: {path}: deploys, anyone, elsewhere" in lines
    assert f"[ok  ] policy deploys: targets.slack = {TARGET}: reachable" in lines
    assert (
        "[FAIL] policy elsewhere: targets.slack = COUT: the app is not a member of #elsewhere (COUT): "
        "invite it there with /invite @<app name>"
    ) in lines
    assert any(
        line.startswith(
            "[FAIL] policy elsewhere: targets.discord = 123: discord is not configured (set DISCORD_BOT_TOKEN"
        )
        for line in lines
    )
    assert "[ok  ] slack: configured and working" in lines
    assert (
        "[--  ] policy elsewhere: approvers email:ada@example.com can answer only after signing in to the "
        "web, and web sign-in is not configured (set HUMANGATE_OIDC_ISSUER, HUMANGATE_OIDC_CLIENT_ID, "
        "HUMANGATE_OIDC_CLIENT_SECRET)"
    ) in lines, lines
    assert (
        "[FAIL] webhooks[0]: http://127.0.0.1:9/hook: 127.0.0.1 is a loopback address; webhooks go only to "
        "public addresses (HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)"
    ) in lines
    assert SECRET not in doctor.stdout + doctor.stderr


async def test_an_mcp_callers_policy_sets_timeout_channels_limits_and_target(
    start_gateway: StartGateway, deploys_channel: FakeSlack, policy_file: Path
) -> None:
    slack = deploys_channel
    gateway = start_gateway(HUMANGATE_API_KEYS=KEYS, HUMANGATE_POLICY_FILE=str(policy_file), **slack.env())
    deploy = start_call(gateway.url, {"message": "Deploy v2?", "schema": APPROVAL}, api_key="k-deploy")
    posted = await slack.server.wait_for(lambda _: slack.stored(TARGET) or None)
    assert posted[0]["text"] and "Deploy v2?" in str(posted[0]["blocks"])
    (first,) = await deploy.wait_for_progress()
    assert deploy.progress[0][1] == 900  # the policy's timeout, not the key's 300
    assert "on slack" in first

    refused = await call_elicit(
        gateway.url, {"message": "Deploy v3?", "schema": APPROVAL, "uiType": "teams"}, api_key="k-deploy"
    )
    assert refused.is_error
    assert refused.content[0].text == (  # type: ignore[union-attr]
        "uiType: policy 'deploys' does not allow channel 'teams'; allowed channels: slack, web"
    )
    limited = await call_elicit(
        gateway.url, {"message": "Deploy v4?", "schema": APPROVAL}, api_key="k-deploy"
    )
    assert limited.is_error
    assert limited.content[0].text.startswith(  # type: ignore[union-attr]
        "Rate limit exceeded: at most 1 pending requests; retry after "
    )

    other = start_call(gateway.url, {"message": "Restart?", "schema": APPROVAL}, api_key="k-other")
    await slack.server.wait_for(lambda _: slack.stored(CHANNEL) or None)  # no policy: the default channel
    assert len(slack.stored(TARGET)) == 1
    await other.wait_for_progress()
    assert other.progress[0][1] == 300
    for call in (deploy, other):
        call.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call.task


async def test_a_rest_caller_names_a_policy_that_applies_to_it(
    start_gateway: StartGateway, deploys_channel: FakeSlack, policy_file: Path
) -> None:
    slack = deploys_channel
    gateway = start_gateway(HUMANGATE_API_KEYS=KEYS, HUMANGATE_POLICY_FILE=str(policy_file), **slack.env())
    body = {"message": "Deploy v2?", "schema": APPROVAL}
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        deploy = {"Authorization": "Bearer k-deploy"}
        other = await client.post(
            "/v1/requests", json={**body, "policy": "deploys"}, headers={"Authorization": "Bearer k-other"}
        )
        assert other.status_code == 403
        assert other.json() == {
            "error": "PolicyRefusedError",
            "detail": "policy: policy 'deploys' does not apply to caller 'other'",
        }
        unknown = await client.post("/v1/requests", json={**body, "policy": "nope"}, headers=deploy)
        assert (unknown.status_code, unknown.json()["detail"]) == (422, "policy: no policy named 'nope'")
        wrong_channel = await client.post("/v1/requests", json={**body, "uiType": "discord"}, headers=deploy)
        assert wrong_channel.status_code == 403
        assert wrong_channel.json()["detail"] == (
            "uiType: policy 'deploys' does not allow channel 'discord'; allowed channels: slack, web"
        )

        created = await client.post("/v1/requests", json={**body, "policy": "deploys"}, headers=deploy)
        assert created.status_code == 201, created.text
        request = created.json()
        assert (request["channel"], request["policy"]) == ("slack", "deploys")
        assert request["deadline"] - request["created_at"] == 900
        (message,) = await slack.server.wait_for(lambda _: slack.stored(TARGET) or None)
        withdrawn = await client.delete(f"/v1/requests/{request['id']}", headers=deploy)
        assert withdrawn.status_code == 200
        shown = await slack.updated(lambda args: args.get("channel") == TARGET)
        assert shown["ts"] == message["ts"]  # the outcome is shown where it was posted
        assert slack.stored(CHANNEL) == []

        for _ in range(2):  # anonymous callers: the policy's 2 new requests per minute
            opened = await client.post("/v1/requests", json={**body, "message": f"{_}", "uiType": "web"})
            assert opened.status_code == 201 and opened.json()["policy"] == "anyone"
        third = await client.post("/v1/requests", json={**body, "message": "third", "uiType": "web"})
        assert third.status_code == 429
        assert third.json()["detail"].startswith("Rate limit exceeded: at most 2 new requests per minute;")


async def test_discord_and_teams_post_to_the_policys_targets(
    start_gateway: StartGateway, discord: FakeDiscord, teams: FakeTeams, tmp_path: Path
) -> None:
    discord.other_channels.add(DISCORD_TARGET)
    teams.conversations.add(TEAMS_TARGET)
    path = tmp_path / "targets.toml"
    path.write_text(
        f'[policies.everywhere]\n[policies.everywhere.targets]\ndiscord = "{DISCORD_TARGET}"\n'
        f'teams = "{TEAMS_TARGET}"\n'
    )
    gateway = start_gateway(HUMANGATE_POLICY_FILE=str(path), **discord.env(), **teams.env())
    async with httpx.AsyncClient(base_url=gateway.url) as client:
        opened = {}
        for channel in ("discord", "teams"):
            created = await client.post(
                "/v1/requests", json={"message": f"On {channel}?", "schema": APPROVAL, "uiType": channel}
            )
            assert created.status_code == 201 and created.json()["policy"] == "everywhere"
            opened[channel] = created.json()["id"]
        (message,) = await discord.posted()
        assert message["channel_id"] == DISCORD_TARGET
        (activity,) = await teams.posted()
        assert teams.server.calls_to(teams.activities_path(conversation=TEAMS_TARGET), "POST")
        assert teams.post_calls() == []  # nothing in the configured conversation
        for hf_id in opened.values():
            assert (await client.delete(f"/v1/requests/{hf_id}")).status_code == 200
    path_of_edit = f"/api/v10/channels/{DISCORD_TARGET}/messages/{message['id']}"
    await discord.server.wait_for(lambda _: discord.server.calls_to(path_of_edit, "PATCH"))
    teams_edit = teams.activities_path(activity["id"], conversation=TEAMS_TARGET)
    await teams.server.wait_for(lambda _: teams.server.calls_to(teams_edit, "PUT"))


@pytest.mark.parametrize("page", ["docs/policies.md", "README.md"])
def test_the_example_files_of_the_docs_are_valid_and_checked_as_shown(page: str, tmp_path: Path) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    example = re.search(r"```toml\n(.*?)```", text, re.DOTALL)
    assert example is not None
    path = tmp_path / "humangate.toml"
    path.write_text(textwrap.dedent(example.group(1)))
    checked = run_cli("policy", "check", str(path), env={})
    assert checked.returncode == 0, checked.stdout
    if page == "docs/policies.md":
        for line in checked.stdout.splitlines()[1:]:  # as the page shows them, indented in its list
            assert f"   {line}\n" in text, line


def test_doctor_checks_the_targets_and_channels_of_steps(
    redis_url: str, deploys_channel: FakeSlack, tmp_path: Path
) -> None:
    path = tmp_path / "steps.toml"
    path.write_text(
        "[policies.oncall]\n"
        '[[policies.oncall.steps]]\nafter = 0\nchannel = "slack"\ntarget = "COUT"\n'
        '[[policies.oncall.steps]]\nafter = 60\nchannel = "slack"\ntarget = "C0DEPLOYS"\n'
        '[[policies.oncall.steps]]\nafter = 120\nchannel = "teams"\n'
    )
    doctor = run_cli("doctor", redis_url=redis_url, env=deploys_channel.env(HUMANGATE_POLICY_FILE=str(path)))
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    lines = doctor.stdout.splitlines()
    assert "[FAIL] policy oncall: steps[2] posts on teams, which is not configured" in lines
    assert any(
        line.startswith("[FAIL] policy oncall: steps[0].target = COUT: the app is not a member")
        for line in lines
    )
    assert "[ok  ] policy oncall: steps[1].target = C0DEPLOYS: reachable" in lines
