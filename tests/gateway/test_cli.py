"""The ``humangate`` command as a person runs it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import psutil

from tests.conftest import ROOMY, StartGateway, run_cli
from tests.gateway.flows import PendingCall, post_form, start_call
from tests.mcp_client import text_of

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


async def test_serve_with_workers_answers_a_call_through_any_of_its_processes(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(embedded=True, args=("--workers", "2"), **ROOMY)
    line = f"humangate running on {gateway.url} in 2 processes (MCP at /mcp; press CTRL+C to quit)"
    # Said once both processes have started (/healthz answers as soon as one has).
    deadline = time.monotonic() + 60
    while line not in (output := gateway.output()) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)  # polling the child's log, bounded by the deadline
    assert output.count(line) == 1 and output.count("Application startup complete.") == 2, output
    assert output.rindex("Application startup complete.") < output.index(line), output
    parent = psutil.Process(gateway.process.pid)
    # The waiting calls spread over both gateway processes (the kernel hands each connection to
    # either), and so do the answers: a call is answered through whichever process gets the post. A
    # process still importing accepts nothing yet, so calls are opened until both hold some.
    calls: list[PendingCall] = []
    forms: list[str] = []
    holding: list[psutil.Process] = []
    while len(holding) < 2 and len(calls) < 60:
        batch = [
            start_call(
                gateway.url, {"message": f"Deploy {len(calls) + i}?", "schema": APPROVAL, "uiType": "web"}
            )
            for i in range(6)
        ]
        calls += batch
        forms += [await call.form_url() for call in batch]
        servers = [
            child
            for child in parent.children()
            if "redis-server" not in child.name() and child.net_connections()
        ]
        holding = [
            s for s in servers if any(c.status == psutil.CONN_ESTABLISHED for c in s.net_connections())
        ]
    assert len(holding) == 2, [s.cmdline() for s in servers]
    for form in forms:
        response = await post_form(form, {"hg-action": "accept", "f.approved": "true"})
        assert response.status_code == 303
    results = await asyncio.gather(*(call.result() for call in calls))
    assert [text_of(result) for result in results] == ['User provided: {"approved":true}'] * len(calls)
    gateway.stop()
    assert gateway.process.returncode == 0
    assert not [
        p
        for p in psutil.process_iter(["name"])
        if p.info["name"] == "redis-server" and p.ppid() == parent.pid
    ]


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
    assert run_cli("keys", "create", "ada", "--operator", env=env).returncode == 0
    listed = run_cli("keys", "list", env=env)
    assert [line.split("\t")[::2] for line in listed.stdout.splitlines()] == [
        ["laptop", "caller"],
        ["ada", "operator"],
    ]
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


async def test_serve_says_where_it_listens_once_it_accepts_connections(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    line = f"humangate running on {gateway.url} (MCP at /mcp; press CTRL+C to quit)"
    output = gateway.output()
    assert output.count(line) == 1, output
    # After uvicorn's start-up (the app's lifespan, the server on the socket), not before it.
    assert output.index("Application startup complete.") < output.index(line), output
    assert "form links start with" not in output  # the public URL is where it listens
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(f"{gateway.url}/healthz")).status_code == 200


async def test_serve_without_a_public_url_hands_out_links_on_the_port_it_listens_on(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(HUMANGATE_PUBLIC_URL="", HUMANGATE_API_KEYS="ci:k1")  # empty: not set
    port = gateway.url.rsplit(":", 1)[1]
    assert port != "8000"
    call = start_call(gateway.url, {"message": "Port?", "schema": APPROVAL, "uiType": "web"}, api_key="k1")
    form = await call.form_url()
    assert form.startswith(f"http://127.0.0.1:{port}/f/"), form
    async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": "Bearer k1"}) as client:
        created = await client.post(
            "/v1/requests", json={"message": "Port?", "schema": APPROVAL, "uiType": "web"}
        )
        assert created.json()["form_url"].startswith(f"http://127.0.0.1:{port}/f/"), created.json()
        response = await post_form(form, {"hg-action": "accept", "f.approved": "true"})
        assert response.status_code == 303  # the link works where it points
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    assert "form links start with" not in gateway.output()


async def test_serve_says_once_when_the_public_url_is_not_where_it_listens(
    start_gateway: StartGateway,
) -> None:
    gateway = start_gateway(HUMANGATE_PUBLIC_URL="https://humangate.example/")
    said = (
        "form links start with HUMANGATE_PUBLIC_URL https://humangate.example, "
        f"not {gateway.url} where serve listens"
    )
    assert gateway.output().count(said) == 1, gateway.output()


def test_serve_help_describes_the_command_and_its_host_and_port() -> None:
    shown = run_cli("serve", "--help", env={})
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())  # argparse wraps to the terminal's width
    assert "Run the gateway: MCP at /mcp" in text
    assert "--host HOST address to listen on (default: 127.0.0.1, this machine only; " in text
    assert "--port PORT port to listen on (default: 8000)" in text


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


def test_keys_create_refuses_a_bad_name_and_a_name_in_use_in_one_line(redis_url: str) -> None:
    bad = run_cli("keys", "create", "bad name!", env={}, redis_url=redis_url)
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == (
        "humangate keys create: key name: 'bad name!' breaks the rule: use 1-64 letters, digits, '-' or '_'"
    )
    assert "Traceback" not in bad.stderr and bad.stdout == ""

    assert run_cli("keys", "create", "alice", "--operator", env={}, redis_url=redis_url).returncode == 0
    taken = run_cli("keys", "create", "alice", env={}, redis_url=redis_url)
    assert taken.returncode == 2 and taken.stdout == ""
    assert taken.stderr.splitlines()[-1] == (
        "humangate keys create: key name: 'alice' is already the name of an operator key; choose another "
        "name, or revoke that key first (humangate keys revoke alice)"
    )
    from_env = run_cli("keys", "create", "ci", env={"HUMANGATE_API_KEYS": "ci:k-ci"}, redis_url=redis_url)
    assert from_env.returncode == 2
    assert "'ci' is already the name of a key in HUMANGATE_API_KEYS" in from_env.stderr
    listed = run_cli("keys", "list", env={}, redis_url=redis_url)
    assert [line.split("\t")[::2] for line in listed.stdout.splitlines()] == [["alice", "operator"]]
    revoked = run_cli("keys", "revoke", "alice", env={}, redis_url=redis_url)
    assert revoked.stdout == "revoked 1 key(s) named alice\n"


def test_audit_export_refuses_a_since_later_than_its_until(redis_url: str) -> None:
    reversed_range = run_cli(
        "audit", "export", "--since", "2026-11-30", "--until", "2026-11-29", env={}, redis_url=redis_url
    )
    assert reversed_range.returncode == 2 and reversed_range.stdout == ""
    assert reversed_range.stderr == (
        "humangate audit export: --since 2026-11-30 is later than --until 2026-11-29: no event can be in "
        "that range; swap them\n"
    )
