"""The ``humangate`` command as a person runs it."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.conftest import StartGateway, run_cli
from tests.gateway.flows import post_form, start_call
from tests.mcp_client import text_of

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def test_serve_with_no_redis_runs_the_web_channel_on_its_own(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    gateway = start_gateway(embedded=True)
    data_dir = tmp_path / "data"
    assert (data_dir / "redis.url").exists()
    env = {"HUMANGATE_DATA_DIR": str(data_dir)}
    created = run_cli("keys", "create", "laptop", env=env)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("hg_")
    call = start_call(gateway.url, {"message": "Embedded?", "schema": APPROVAL, "uiType": "web"}, api_key=key)
    form = await call.form_url()
    assert call.progress[0][1] == 300  # the key made the caller authenticated
    await post_form(form, {"hg-action": "accept", "f.approved": "true"})
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    listed = run_cli("keys", "list", env=env)
    assert listed.stdout.split("\t")[0] == "laptop"
    assert run_cli("keys", "revoke", "laptop", env=env).returncode == 0
    async with httpx.AsyncClient() as client:
        refused = await client.post(
            f"{gateway.url}/mcp",
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert refused.status_code == 401
    gateway.stop()
    assert not (data_dir / "redis.url").exists()
    assert (data_dir / "appendonlydir").exists() or any(data_dir.glob("*.aof"))


def test_doctor_reports_redis_and_channels_in_plain_words(redis_url: str) -> None:
    result = run_cli("doctor", env={"HUMANGATE_REDIS_URL": redis_url})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ok  ] Redis" in result.stdout
    assert "[ok  ] web: configured and working" in result.stdout
    assert "[--  ] teams: not configured (set TEAMS_APP_ID, TEAMS_APP_PASSWORD" in result.stdout


def test_doctor_fails_when_redis_is_unreachable() -> None:
    result = run_cli("doctor", env={"HUMANGATE_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert result.returncode == 1
    assert "[FAIL] Redis: cannot reach redis://127.0.0.1:1/0" in result.stdout


def test_doctor_never_prints_the_redis_password() -> None:
    result = run_cli("doctor", env={"HUMANGATE_REDIS_URL": "redis://:hunter2@127.0.0.1:1/0"})
    assert "hunter2" not in result.stdout + result.stderr


def test_worker_refuses_unknown_channels(redis_url: str) -> None:
    result = run_cli("worker", "--channels", "web,fax", "--burst", env={"HUMANGATE_REDIS_URL": redis_url})
    assert result.returncode == 2
    assert "unknown channel(s) fax" in result.stderr


def test_worker_in_burst_mode_drains_its_queues(redis_url: str) -> None:
    result = run_cli("worker", "--channels", "web", "--burst", env={"HUMANGATE_REDIS_URL": redis_url})
    assert result.returncode == 0, result.stderr
    assert "on queues humangate-web" in result.stderr
    assert "ERROR" not in result.stderr
