"""Checking a person's answer without blocking the event loop.

An agent's ``pattern`` may be written to backtrack for as long as it is let, so an answer to a schema
with patterns is validated in a small thread pool of its own (the ``regex`` engine releases the GIL
while it matches), all its matches within ``schemas.answers.PATTERN_BUDGET``. The pool is bounded
twice: ``PATTERN_THREADS`` threads match at once, and at most ``MAX_PATTERN_CHECKS`` answers may be
checking or queued; one more is refused at once as busy. A flood of hostile answers therefore costs
a short queue and two threads, never the event loop, every thread, or unbounded memory.

An answer to a schema without patterns is validated on the loop: jsonschema's checks of at most
``max_properties`` values, each bounded by the request body limit, take well under a millisecond.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from schemas.answers import has_patterns, validate_answer
from schemas.errors import InvalidAnswerError

PATTERN_THREADS = 2
"""Threads of one gateway process that match agents' patterns at once."""

MAX_PATTERN_CHECKS = 32
"""Answers with patterns that may be checking or queued at once in one process; more are refused
as busy. The longest wait is then MAX_PATTERN_CHECKS / PATTERN_THREADS x PATTERN_BUDGET (1.6 s)."""

BUSY = "could not be checked now: many answers are being checked; send it again in a moment"
"""The form-level reason of an answer refused because every pattern check slot was taken."""


class PatternChecks:
    """A bounded pool that validates answers whose schema has patterns, off the event loop."""

    def __init__(self, threads: int = PATTERN_THREADS, max_checks: int = MAX_PATTERN_CHECKS) -> None:
        self.max_checks = max_checks
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="humangate-patterns")
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Answers being checked or queued right now."""
        return self._in_flight

    async def validate(self, schema: Mapping[str, Any], content: object) -> dict[str, Any]:
        """``validate_answer`` in the pool; ``InvalidAnswerError`` (form-level ``BUSY``) when full."""
        with self._lock:
            if self._in_flight >= self.max_checks:
                raise InvalidAnswerError({"": BUSY})
            self._in_flight += 1
        # The slot is given back when the thread is done, not when the caller stops waiting: a
        # caller that is cancelled must not let more work queue up than the bound.
        job = self._executor.submit(validate_answer, schema, content)
        job.add_done_callback(self._release)
        return await asyncio.wrap_future(job)

    def _release(self, job: Future[dict[str, Any]]) -> None:
        with self._lock:
            self._in_flight -= 1


PATTERN_CHECKS = PatternChecks()
"""The pool of this process (its threads start on first use)."""


async def validate_answer_off_loop(schema: Mapping[str, Any], content: object) -> dict[str, Any]:
    """``schemas.answers.validate_answer`` for the event loop: pattern matching runs in
    ``PATTERN_CHECKS``; answers to schemas without patterns are checked in place."""
    if not has_patterns(schema):
        return validate_answer(schema, content)
    return await PATTERN_CHECKS.validate(schema, content)
