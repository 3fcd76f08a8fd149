"""What the Redis humangate uses looks like: its master, the replicas, the sentinels (``doctor``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis import Redis as SyncRedis
from redis.exceptions import RedisError

from gateway.core.redis_client import sentinel_of
from gateway.core.redis_target import RedisTarget


@dataclass(frozen=True, slots=True)
class SentinelView:
    """One sentinel as ``doctor`` saw it: the master it names, or why it could not be asked."""

    address: str
    master: str | None = None
    quorum: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Topology:
    role: str
    """What the server humangate writes to says it is (``master``, or ``slave`` when misdirected)."""
    replicas: list[str] = field(default_factory=list)
    """Each replica the master serves: ``ip:port (state, lag n s)``."""
    sentinels: list[SentinelView] = field(default_factory=list)


def read_topology(client: SyncRedis, target: RedisTarget) -> Topology:
    """Ask the master (``INFO replication``) and, with Sentinel, every sentinel on its own."""
    info: dict[str, Any] = client.info("replication")
    replicas = []
    for index in range(int(info.get("connected_slaves", 0))):
        replica = info.get(f"slave{index}")
        if isinstance(replica, dict):
            replicas.append(
                f"{replica.get('ip')}:{replica.get('port')} "
                f"({replica.get('state', '?')}, lag {replica.get('lag', '?')} s)"
            )
    views = []
    if target.is_sentinel:
        manager = sentinel_of(target)
        try:
            for (host, port), sentinel in zip(target.sentinel_addresses(), manager.sentinels, strict=True):
                address = f"{host}:{port}"
                try:
                    state: Any = sentinel.sentinel_master(target.master)
                    views.append(
                        SentinelView(address, f"{state['ip']}:{state['port']}", int(state["quorum"]))
                    )
                except RedisError as exc:
                    views.append(SentinelView(address, error=f"{type(exc).__name__}: {exc}"))
        finally:
            for sentinel in manager.sentinels:
                sentinel.close()
    return Topology(str(info.get("role", "?")), replicas, views)


def topology_lines(
    topology: Topology, target: RedisTarget, wait_replicas: int
) -> list[tuple[bool | None, str]]:
    """``doctor``'s lines about ``topology``: (ok, FAIL or a warning, text)."""
    lines: list[tuple[bool | None, str]] = []
    if topology.role != "master":
        lines.append((False, f"Redis: the server humangate writes to is a {topology.role}, not a master"))
    replicas = ", ".join(topology.replicas) or "none"
    lines.append((True, f"Redis replicas: {len(topology.replicas)} ({replicas})"))
    if wait_replicas > len(topology.replicas):
        lines.append(
            (
                None,
                f"Redis: answers wait for {wait_replicas} replica(s) (HUMANGATE_REDIS_WAIT_REPLICAS) but "
                f"{len(topology.replicas)} are connected: each answer waits HUMANGATE_REDIS_WAIT_TIMEOUT",
            )
        )
    if not target.is_sentinel:
        return lines
    reachable = [view for view in topology.sentinels if view.error is None]
    masters = {view.master or "?" for view in reachable}
    quorum = max((view.quorum or 0 for view in reachable), default=0)
    for view in topology.sentinels:
        if view.error is not None:
            lines.append((None, f"Redis sentinel {view.address}: unreachable ({view.error})"))
    if not reachable:
        lines.append((False, f"Redis sentinels: none of {len(topology.sentinels)} answers"))
    elif len(masters) > 1:
        lines.append(
            (False, f"Redis sentinels disagree on the master of {target.master!r}: {sorted(masters)}")
        )
    else:
        ok = len(reachable) >= quorum
        lines.append(
            (
                ok,
                f"Redis sentinels: {len(reachable)} of {len(topology.sentinels)} answer, quorum {quorum}, "
                f"master {target.master!r} at {masters.pop()}",
            )
        )
    return lines
