"""``humangate doctor`` on a first run: what it can tell offline it tells without asking a platform;
a platform that answers oddly (a missing field, an HTML error page, nothing) is one failed check
saying what came, never a traceback, and no SDK log line reaches the report. Real CLI processes
against the fakes of tests/fakes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import run_cli
from tests.fakes.discord import CHANNEL_ID, FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.teams import TENANT_ID, FakeTeams
from tests.fakes.telegram import TOKEN as TELEGRAM_TOKEN
from tests.fakes.telegram import FakeTelegram

ERROR_PAGE = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
"""What a proxy in front of a platform answers when the platform is down."""


def doctor(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("doctor", env={"HUMANGATE_DATA_DIR": str(tmp_path / "data")} | env)


def failed(done: subprocess.CompletedProcess[str], channel: str) -> list[str]:
    """The channel's failed checks; the report is nothing but its own lines."""
    assert done.stderr == "", done.stderr  # no SDK log line, no traceback
    assert all(line.startswith(("[ok  ]", "[FAIL]", "[--  ]")) for line in done.stdout.splitlines()), (
        done.stdout
    )
    return [line for line in done.stdout.splitlines() if line.startswith(f"[FAIL] {channel}: ")]


def test_slack_answering_an_html_error_page_is_one_failed_check(slack: FakeSlack, tmp_path: Path) -> None:
    slack.server.script("POST", "/api/auth.test", 502, text=ERROR_PAGE)
    done = doctor(slack.env(), tmp_path)
    assert done.returncode == 1
    assert failed(done, "slack") == [
        "[FAIL] slack: Slack had a temporary problem (HTTP 502) when asked to check the token"
    ]


def test_slack_not_answering_is_one_failed_check(slack: FakeSlack, tmp_path: Path) -> None:
    release = slack.server.stall("POST", "/api/auth.test")
    try:
        done = doctor(slack.env(), tmp_path)
    finally:
        release.set()
    assert done.returncode == 1
    assert failed(done, "slack") == ["[FAIL] slack: could not reach Slack to check the token (TimeoutError)"]


def test_discord_answering_a_field_of_another_form_is_one_failed_check(
    discord: FakeDiscord, tmp_path: Path
) -> None:
    discord.server.script("GET", f"/api/v10/channels/{CHANNEL_ID}", 200, {"id": CHANNEL_ID, "type": "text"})
    done = doctor(discord.env(), tmp_path)
    assert done.returncode == 1
    (line,) = failed(done, "discord")
    assert (
        line.startswith("[FAIL] discord: unexpected answer from Discord (ValueError: ") and "'text'" in line
    )


def test_teams_metadata_without_its_keys_and_an_error_page_for_a_token(
    teams: FakeTeams, tmp_path: Path
) -> None:
    teams.server.script("GET", "/botframework/v1/.well-known/openidconfiguration", 200, {"issuer": "x"})
    teams.server.script("POST", f"/{TENANT_ID}/oauth2/v2.0/token", 502, text=ERROR_PAGE)
    done = doctor(teams.env(), tmp_path)
    assert done.returncode == 1
    assert failed(done, "teams") == [
        "[FAIL] teams: HUMANGATE_TEAMS_OPENID_URL: the OpenID metadata names no jwks_uri, so no click"
        " could be verified",
        "[FAIL] teams: the token endpoint answered 502",
    ]


def test_telegram_answering_an_html_page_is_one_failed_check(telegram: FakeTelegram, tmp_path: Path) -> None:
    telegram.server.script("POST", f"/bot{TELEGRAM_TOKEN}/getMe", 200, text=ERROR_PAGE)
    done = doctor(telegram.env(), tmp_path)
    assert done.returncode == 1
    (line,) = failed(done, "telegram")
    assert line.startswith("[FAIL] telegram: getMe: "), line


def test_tokens_of_the_wrong_kind_are_found_without_asking_the_platforms(
    slack: FakeSlack, discord: FakeDiscord, teams: FakeTeams, telegram: FakeTelegram, tmp_path: Path
) -> None:
    env = (
        slack.env(SLACK_BOT_TOKEN="xapp-1-A1-app-level", SLACK_SIGNING_SECRET="xoxb-a-bot-token")
        | discord.env(DISCORD_BOT_TOKEN="Bot fake-discord-bot-token")
        | teams.env(TEAMS_APP_ID="my-bot", TEAMS_TENANT_ID="contoso tenant")
        | telegram.env()
        | {
            "TELEGRAM_BOT_TOKEN": "AAFakeTelegramTokenWithoutItsBotId",
            "HUMANGATE_TELEGRAM_CHAT_ID": "approvals",
        }
    )
    done = doctor(env, tmp_path)
    assert done.returncode == 1
    assert [line.split(" is ")[0] for line in failed(done, "slack")] == [
        "[FAIL] slack: SLACK_BOT_TOKEN",
        "[FAIL] slack: SLACK_SIGNING_SECRET",
    ]
    assert "an app-level token (it belongs in SLACK_APP_TOKEN), not a bot token" in done.stdout
    assert failed(done, "discord") == [
        "[FAIL] discord: DISCORD_BOT_TOKEN starts with 'Bot ': set the token alone (humangate adds the 'Bot '"
        " itself)"
    ]
    assert [line.split(" is ")[0] for line in failed(done, "teams")] == [
        "[FAIL] teams: TEAMS_APP_ID",
        "[FAIL] teams: TEAMS_TENANT_ID",
    ]
    assert [line.split(" is ")[0] for line in failed(done, "telegram")] == [
        "[FAIL] telegram: TELEGRAM_BOT_TOKEN",
        "[FAIL] telegram: HUMANGATE_TELEGRAM_CHAT_ID",
    ]
    assert "<digits>:<secret>" in done.stdout
    for server in (slack.server, discord.server, teams.server, telegram.server):
        assert server.calls == []  # nothing was asked of a platform


def test_a_half_configured_channel_is_a_failed_check_and_the_embedded_data_is_named(tmp_path: Path) -> None:
    done = doctor({"TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN}, tmp_path)
    assert done.returncode == 1
    assert failed(done, "telegram") == [
        "[FAIL] telegram: half configured: TELEGRAM_BOT_TOKEN is set, but Telegram also needs"
        " HUMANGATE_TELEGRAM_CHAT_ID: set it too, or unset TELEGRAM_BOT_TOKEN to leave telegram off"
    ]
    assert f"its data kept in {(tmp_path / 'data').resolve()} (HUMANGATE_DATA_DIR)" in done.stdout
