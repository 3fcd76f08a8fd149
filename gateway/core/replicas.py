"""Closing Redis's replication window for what humangate tells people and agents is saved.

A Redis master acknowledges a write before its replicas have it (replication is asynchronous). If
the master dies in that moment, Sentinel promotes a replica that never had the write. For most of
humangate's keys that costs nothing (a returned mark, a delivery note), but three writes must not
vanish after someone was told they happened:

- a new request (its caller would wait on a request that no longer exists, and nobody is asked);
- a person's answer (the person was told "recorded");
- a delivery attempt's count (a retry that does not see it may post the request a second time).

So each of these is followed, on the same connection, by ``WAIT <replicas> <timeout>``, and is
acknowledged only once that many replicas hold it, or the timeout passed (then it is acknowledged
anyway and a warning is logged: the master still has it, only a failover in that very moment can
lose it). If the master dies before the replicas have it, the ``WAIT`` fails with the connection,
the write is reported as not saved ("store unavailable"), and the person or the worker tries again
on the new master.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from schemas.settings import Settings

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class ReplicaWait:
    """``WAIT`` for ``replicas`` replicas, at most ``timeout`` seconds, after a write that matters."""

    replicas: int
    timeout: float
    _short: bool = field(default=False, repr=False)

    def command(self) -> tuple[str, int, int]:
        return ("WAIT", self.replicas, max(1, math.ceil(self.timeout * 1000)))

    def acknowledged(self, acked: int, what: str) -> None:
        """Note how many replicas acknowledged ``what``; warn (once per stretch) when too few did."""
        if acked >= self.replicas:
            if self._short:
                logger.info("replicas acknowledge writes again (%d of %d)", acked, self.replicas)
            self._short = False
            return
        if not self._short:
            logger.warning(
                "only %d of %d replicas acknowledged %s within %.1f s; acknowledged anyway (a failover "
                "right now could lose it): check the replicas",
                acked,
                self.replicas,
                what,
                self.timeout,
            )
        self._short = True


def replica_wait(settings: Settings) -> ReplicaWait | None:
    """The ``WAIT`` of ``settings`` (``HUMANGATE_REDIS_WAIT_REPLICAS``), or ``None`` for none."""
    replicas = settings.wait_replicas
    return ReplicaWait(replicas, settings.redis_wait_timeout) if replicas else None
