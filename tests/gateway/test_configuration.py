"""Settings mistakes through the real ``humangate`` command: every command, given a bad value of every
setting at once, prints one line per setting on stderr and exits 2, no traceback; rules between
settings (an https public URL for a Telegram webhook, a half-configured channel) likewise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.setting_errors import env_name
from schemas.settings import Settings
from tests.schemas.test_setting_errors import LIBRARY_WORDS, bad_values

COMMANDS = [
    ("serve",),
    ("worker", "--burst"),
    ("keys", "list"),
    ("policy", "check"),
    ("doctor",),
    ("audit", "export"),
    ("webhooks", "failed"),
]
"""One invocation of each command that reads the settings."""

ROOT = Path(__file__).resolve().parents[2]


def humangate(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``humangate ARGS`` in ``cwd`` with only ``env`` of the settings."""
    drop = ("HUMANGATE_", "SLACK_", "DISCORD_", "TEAMS_", "TELEGRAM_")
    base = {k: v for k, v in os.environ.items() if not k.startswith(drop)} | {"PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        env=base | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_words_only(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr and not any(words in done.stderr for words in LIBRARY_WORDS)
    lines = done.stderr.splitlines()
    assert all(line.startswith("humangate: ") for line in lines), done.stderr
    return [line.removeprefix("humangate: ") for line in lines]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_names_every_bad_setting_in_one_line_each(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    env = {env_name(name): bad_values(name)[0] for name in Settings.model_fields}
    lines = assert_words_only(humangate(*command, env=env, cwd=tmp_path))
    assert [line.split(":")[0] for line in lines] == [env_name(name) for name in Settings.model_fields]
    assert not (tmp_path / ".humangate").exists()  # refused before anything was made


def test_serve_refuses_a_telegram_webhook_without_an_https_public_url(tmp_path: Path) -> None:
    env = {"HUMANGATE_TELEGRAM_WEBHOOK_SECRET": "s3cret", "HUMANGATE_PUBLIC_URL": "http://hg.example.org"}
    (line,) = assert_words_only(humangate("serve", env=env, cwd=tmp_path))
    assert line.startswith("HUMANGATE_TELEGRAM_WEBHOOK_SECRET is set, so Telegram must reach"), line


def test_worker_refuses_a_half_configured_channel(tmp_path: Path) -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1-2", "TELEGRAM_BOT_TOKEN": "123:abc"}
    lines = assert_words_only(humangate("worker", "--burst", env=env, cwd=tmp_path))
    assert lines == [
        "SLACK_BOT_TOKEN is set, but Slack also needs SLACK_APP_TOKEN or SLACK_SIGNING_SECRET and"
        " HUMANGATE_SLACK_CHANNEL: set them too, or unset SLACK_BOT_TOKEN to leave slack off",
        "TELEGRAM_BOT_TOKEN is set, but Telegram also needs HUMANGATE_TELEGRAM_CHAT_ID: set it too,"
        " or unset TELEGRAM_BOT_TOKEN to leave telegram off",
    ]


def test_commands_that_use_no_channel_run_with_a_half_configured_one(tmp_path: Path) -> None:
    done = humangate("policy", "check", env={"SLACK_BOT_TOKEN": "xoxb-1-2"}, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("no policy file"), done.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("serve", "--port", "99999"), "humangate serve: argument --port: '99999' is not a port"),
        (("serve", "--workers", "0"), "humangate serve: argument --workers: '0' is not a whole number of 1"),
        (("audit", "export", "--format", "xml"), "humangate audit export: argument --format: invalid choice"),
        (("audit", "export", "--since", "yesterday"), "humangate audit export: --since/--until: 'yesterday'"),
        (("keys", "list"), "humangate keys: no humangate data in "),
        (("webhooks", "redrive"), "humangate webhooks redrive: name delivery ids, or --all"),
    ],
    ids=" ".join,
)
def test_every_mistake_on_the_command_line_is_one_line_on_stderr(
    args: tuple[str, ...], line: str, tmp_path: Path
) -> None:
    done = humangate(*args, env={}, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (said,) = done.stderr.splitlines()
    assert said.startswith(line), said
