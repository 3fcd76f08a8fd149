"""The command line of webhooks (docs/cli.md#humangate-webhooks): ``policy check`` and ``serve`` refuse a
webhook to a private address, ``webhooks failed`` lists failed deliveries and ``webhooks redrive``
sends them again, all run as a person would."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from redis.asyncio import Redis

from gateway.core import redis_keys as keys
from gateway.core.embedded import free_port
from gateway.core.redis_target import RedisTarget
from gateway.core.webhook_store import WebhookStore
from schemas.policies import parse_policies
from schemas.settings import Settings
from tests.conftest import run_cli
from tests.webhook_receiver import SECRET, policy_text, running_receiver
from tests.workers.test_webhook_sender import until
from workers.webhook_sender import WebhookSender

PRIVATE = f"""\
[[webhooks]]
url = "https://hooks.example.com/a"
secret = "{SECRET}"

[[webhooks]]
url = "http://127.0.0.1:9/hooks"
secret = "{SECRET}"

[[webhooks]]
secret = "{SECRET}"
url = "http://localhost:9/hooks"
"""


def test_policy_check_refuses_a_webhook_to_a_private_address_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "humangate.toml"
    path.write_text(PRIVATE)
    checked = run_cli("policy", "check", str(path), env={})
    assert checked.returncode == 1
    assert checked.stdout.splitlines() == [
        f"{path}:6: webhooks[1].url: 127.0.0.1 is a loopback address; webhooks go only to public "
        "addresses (HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)",
        f"{path}:11: webhooks[2].url: localhost resolves to 127.0.0.1, a loopback address; webhooks go "
        "only to public addresses (HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)",
    ]
    allowed = run_cli("policy", "check", str(path), env={"HUMANGATE_WEBHOOK_ALLOW_PRIVATE": "true"})
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "  webhook http://127.0.0.1:9/hooks: request.created, request.posted" in allowed.stdout
    assert SECRET not in checked.stdout + checked.stderr + allowed.stdout + allowed.stderr


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_refuse_to_start_with_a_webhook_to_a_private_address(
    tmp_path: Path, redis_url: str, command: str
) -> None:
    path = tmp_path / "humangate.toml"
    path.write_text(PRIVATE)
    args = ("--port", str(free_port())) if command == "serve" else ("--channels", "web")
    started = run_cli(command, *args, env={"HUMANGATE_POLICY_FILE": str(path)}, redis_url=redis_url)
    assert started.returncode == 2
    assert f"humangate {command}: not starting:" in started.stderr
    assert "webhooks[1].url: 127.0.0.1 is a loopback address" in started.stderr
    assert SECRET not in started.stdout + started.stderr


async def test_failed_deliveries_are_listed_and_redriven_from_the_cli(settings: Settings) -> None:
    configured = settings.model_copy(update={"webhook_allow_private": True, "webhook_retry_schedule": [0.1]})
    redis = Redis.from_url(str(settings.redis_url))
    store = WebhookStore(redis, [0.1])
    with running_receiver(lambda n: 500 if n <= 2 else 200) as receiver:
        sender = WebhookSender(
            RedisTarget.of(configured), parse_policies(policy_text(receiver.url)).webhooks, configured
        )
        sender.start()
        try:
            await store.queue(
                "msg_cli", "request.ended", '{"type":"request.ended"}', [receiver.url], time.time()
            )
            [failed] = await until(lambda: store.failed(), lambda rows: bool(rows))
            listed = run_cli("webhooks", "failed", env={}, redis_url=settings.redis_url)
            assert listed.returncode == 0, listed.stderr
            header, row = listed.stdout.splitlines()
            assert header == "id\tstate\tevent\turl\tattempts\tat\terror"
            assert row.split("\t")[:5] == [failed.id, "failed", "request.ended", receiver.url, "2"]
            assert row.endswith("\tHTTP 500 (after 2 attempts)")

            unknown = run_cli("webhooks", "redrive", "msg_none.0", env={}, redis_url=settings.redis_url)
            assert unknown.returncode == 1 and "msg_none.0: not a failed delivery" in unknown.stderr
            nothing = run_cli("webhooks", "redrive", env={}, redis_url=settings.redis_url)
            assert nothing.returncode == 2 and "name delivery ids, or --all" in nothing.stderr

            redriven = run_cli("webhooks", "redrive", "--all", env={}, redis_url=settings.redis_url)
            assert redriven.returncode == 0, redriven.stderr
            assert redriven.stdout == f"queued again {failed.id}\n"
            arrived = receiver.wait_for(3)
            await until(
                lambda: redis.hget(keys.webhook_delivery(failed.id), "state"), lambda s: s == b"delivered"
            )
            empty = run_cli("webhooks", "failed", env={}, redis_url=settings.redis_url)
            assert empty.stdout == "" and "no failed webhook deliveries" in empty.stderr
        finally:
            sender.stop()
            await redis.aclose()
    assert {r.headers["webhook-id"] for r in arrived} == {"msg_cli"}
    assert len({r.body for r in arrived}) == 1
    arrived[2].verified()


def test_policy_check_lists_a_private_address_beside_the_files_other_mistakes(tmp_path: Path) -> None:
    # A wrong secret used to stop the check before the URLs were looked at.
    path = tmp_path / "humangate.toml"
    path.write_text(PRIVATE.replace(f'secret = "{SECRET}"', 'secret = "not-a-secret"', 1))
    checked = run_cli("policy", "check", str(path), env={})
    assert checked.returncode == 1
    assert checked.stdout.splitlines() == [
        f"{path}:3: webhooks[0].secret: must start with whsec_ (a Standard Webhooks secret)",
        f"{path}:6: webhooks[1].url: 127.0.0.1 is a loopback address; webhooks go only to public "
        "addresses (HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)",
        f"{path}:11: webhooks[2].url: localhost resolves to 127.0.0.1, a loopback address; webhooks go "
        "only to public addresses (HUMANGATE_WEBHOOK_ALLOW_PRIVATE=true allows it)",
    ]
    assert checked.stderr.splitlines()[0] == f"{path}: 3 mistake(s)"
