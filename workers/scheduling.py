"""The schedule's thread in every worker process: fires due steps and reminders
(``gateway.core.schedule``; docs/escalation.md#the-schedule).

Each kind of entry has a handler that says what firing it does: queue its RQ job on the right
channel's queue, and (a step) mark it fired in the request's hash so its approvers may answer.
Another kind of work (webhook retries) adds its handler to ``HANDLERS``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from redis import Redis as SyncRedis

from gateway.core import redis_keys as keys
from gateway.core.escalation import REMIND, STEP
from gateway.core.queue import UPDATE_JOB_TTL, JobRecorder
from gateway.core.redis_client import is_unavailable
from gateway.core.schedule import POLL_INTERVAL, Entry, Firing, Handler, Schedule
from gateway.core.store import step_fired_field

logger = logging.getLogger(__name__)

_jobs = JobRecorder()


def fire_step(entry: Entry) -> Firing:
    """Step ``<index>:<channel>`` of request ``entry.ref``: mark it fired, queue its post."""
    index, channel = entry.arg.split(":", 1)
    hf_key = keys.human_function(entry.ref)
    commands = _jobs.scheduled(channel, "workers.steps.post_step", entry.ref, entry.arg, UPDATE_JOB_TTL)
    return Firing(hf_key, [("HSET", hf_key, step_fired_field(int(index)), repr(time.time())), *commands])


def fire_reminder(entry: Entry) -> Firing:
    """Reminder ``<index>:<channel>`` of request ``entry.ref``: queue it on that channel's queue."""
    channel = entry.arg.split(":", 1)[1]
    commands = _jobs.scheduled(channel, "workers.steps.remind", entry.ref, entry.arg, UPDATE_JOB_TTL)
    return Firing(keys.human_function(entry.ref), commands)


HANDLERS: dict[str, Handler] = {STEP: fire_step, REMIND: fire_reminder}
"""What each kind of schedule entry does when it fires."""


class SchedulePoller:
    """A daemon thread firing what is due every ``POLL_INTERVAL`` (one command while nothing is)."""

    def __init__(
        self, connection: SyncRedis, interval: float = POLL_INTERVAL, clock: Callable[[], float] = time.time
    ) -> None:
        self.connection = connection
        self.schedule = Schedule(connection, HANDLERS)
        self.interval = interval
        self.clock = clock
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="humangate-schedule", daemon=True)
        self._failing = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(self.interval * 10)

    def look(self) -> float:
        """Fire what is due; the seconds until the next look (until the soonest entry is due, at
        most ``interval``; none after firing, since more may have come due meanwhile)."""
        now = self.clock()
        soonest = self.schedule.next_due()
        if soonest is None:
            return self.interval
        if soonest > now:
            return min(self.interval, soonest - now)
        fired = self.schedule.fire_all(now)
        for entry in fired:
            logger.info("fired %s hf=%s %s", entry.kind, entry.ref, entry.arg)
        return 0.0 if fired else self.interval

    def _run(self) -> None:
        took, pause = 0.0, self.interval
        while not self._stopping.wait(max(0.0, pause - took)):
            started = time.monotonic()
            pause = self.interval
            try:
                pause = self.look()
                if self._failing:
                    logger.info("schedule: Redis is back")
                self._failing = False
            except Exception as exc:
                if not is_unavailable(exc):
                    logger.exception("schedule pass failed; retrying")
                elif not self._failing:
                    logger.warning("schedule: Redis is unavailable (%s); retrying", exc)
                self._failing = is_unavailable(exc)
            took = time.monotonic() - started
