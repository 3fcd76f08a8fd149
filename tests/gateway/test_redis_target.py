"""Where Redis is (a URL, or the master of sentinels), how its settings are checked, what ``doctor``
says about the topology, and the ``WAIT`` for replicas after the writes that must survive a
failover."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import pytest
import redis
from pydantic import ValidationError

from gateway.core import redis_keys as keys
from gateway.core.redis_client import async_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.replicas import ReplicaWait, replica_wait
from gateway.core.store import HumanFunctionStore
from schemas.models import HumanFunction
from schemas.settings import Settings
from tests.conftest import run_cli
from tests.sentinels import MASTER_NAME, SentinelTopology

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


def settings_of(**values: object) -> Settings:
    return Settings(**values, _env_file=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "entry", ["sentinel-a", "sentinel-a:0", "sentinel-a:port", "http://sentinel-a:26379"]
)
def test_a_bad_sentinel_address_is_refused_naming_the_setting_and_the_rule(entry: str) -> None:
    with pytest.raises(ValidationError) as refused:
        settings_of(redis_sentinels=f"sentinel-b:26379,{entry}")
    assert "redis_sentinels" in str(refused.value)
    assert entry in str(refused.value)


def test_tls_and_acl_users_reach_the_master_and_the_sentinels() -> None:
    settings = settings_of(
        redis_url="rediss://humangate:s3cret@ignored:6379/2",
        redis_sentinels="rediss://watcher:w4tch@s1:26379, s2:26379",
        redis_sentinel_master="prod",
    )
    target = RedisTarget.of(settings)
    assert target.is_sentinel and target.master == "prod"
    assert target.sentinel_addresses() == [("s1", 26379), ("s2", 26379)]
    master = target.master_options()
    assert (master["username"], master["password"], master["db"], master["ssl"]) == (
        "humangate",
        "s3cret",
        2,
        True,
    )
    assert "host" not in master and "port" not in master  # the sentinels name the master
    sentinel = target.sentinel_options()
    assert (sentinel["username"], sentinel["password"], sentinel["ssl"]) == ("watcher", "w4tch", True)
    assert "s3cret" not in target.describe() and "w4tch" not in target.describe()
    assert settings.wait_replicas == 1  # sentinels: answers wait for one replica by default
    assert settings_of(redis_url="redis://r:6379/0").wait_replicas == 0
    assert replica_wait(settings_of(redis_url="redis://r:6379/0")) is None


def test_doctor_reports_master_replicas_and_sentinels_with_an_acl_user(tmp_path: Path) -> None:
    with SentinelTopology(tmp_path, user="humangate", password="s3cret-pw") as topology:
        result = run_cli("doctor", env=topology.env())
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"[ok  ] Redis replicas: 1 (127.0.0.1:{topology.replica_port} (online" in result.stdout
        assert (
            f"[ok  ] Redis sentinels: 3 of 3 answer, quorum 2, master {MASTER_NAME!r} at "
            f"127.0.0.1:{topology.master_port}"
        ) in result.stdout
        assert "s3cret-pw" not in result.stdout + result.stderr

        wrong = topology.env() | {"HUMANGATE_REDIS_URL": "redis://humangate:wrong@named-by-sentinels/0"}
        refused = run_cli("doctor", env=wrong)
        assert refused.returncode == 1 and "[FAIL] Redis: cannot reach" in refused.stdout


async def test_a_new_request_waits_for_a_replica_and_says_so_when_none_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SentinelTopology(tmp_path) as topology:
        client = async_redis(
            RedisTarget(
                "redis://x/0", tuple(topology.env()["HUMANGATE_REDIS_SENTINELS"].split(",")), MASTER_NAME
            )
        )
        store = HumanFunctionStore(client, replicas=ReplicaWait(1, 0.5))
        try:
            await store.create(request("healthy"), "fp-1", "timed out", [])
            with redis.Redis(port=topology.replica_port) as replica:  # on the replica once acknowledged
                assert replica.exists(keys.human_function("a" * 16))
            stalled = threading.Thread(target=sleep_replica, args=(topology.replica_port, 2.0))
            stalled.start()
            time.sleep(0.2)  # let DEBUG SLEEP reach the replica before writing (it only delays)
            started = time.monotonic()
            with caplog.at_level(logging.WARNING, "gateway.core.replicas"):
                await store.create(request("stalled", "b"), "fp-2", "timed out", [])
            assert time.monotonic() - started >= 0.5
            assert "only 0 of 1 replicas acknowledged a new request" in caplog.text
            await asyncio.to_thread(stalled.join)
        finally:
            await client.aclose()


def request(message: str, letter: str = "a") -> HumanFunction:
    now = time.time()
    return HumanFunction(
        id=letter * 16,
        requester="t",
        owner="t",
        channel="web",
        message=message,
        request_schema=APPROVAL,
        created_at=now,
        deadline=now + 60,
        form_secret="s" * 32,
    )


def sleep_replica(port: int, seconds: float) -> None:
    with redis.Redis(port=port, socket_timeout=seconds + 5) as replica:
        replica.execute_command("DEBUG", "SLEEP", seconds)
