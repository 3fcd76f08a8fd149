"""Answers first: work that can wait a moment yields to requests being ended and handed over.

When many people answer at once (two hundred form posts in the same second), each answer's own
work is on somebody's path: the form post, the ``FINISH`` step, the waiting call's tool result. The
progress ticks of the calls still waiting are not: at 10,000 waiting calls they are 2,000 a second
(each call ticks every poll interval), about 0.2 ms of the event loop each, and a burst of answers
that shares the loop with them takes a third to a half longer (issue 30,
``tests/bench/bench_answers.py``). The paced young collection (``gateway.collector``) can wait too.

So every answer that reaches this process (any ``POST`` but ``/mcp``'s: a form, the inbox, a
platform's callback; ``gateway.mcp.entry``) and every ending the events reader hears of (an answer
given anywhere: a socket, another process) marks the process busy for ``HUSH`` seconds. A regular
progress tick that falls due while it is busy waits for the quiet, at most ``LONGEST`` seconds (a
fifth of the poll interval if that is less), and the tick after it keeps its own time (its pause is
shortened by the wait), so a call still ticks once per poll interval on average and no tick is
more than that late. The first tick of a call, and the ticks that report a change (a person
started, an escalation), never wait; nor does a call's deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

HUSH = 0.1
"""Seconds after the last answer or ending the process counts as busy handing answers over."""

LONGEST = 1.0
"""Seconds a progress tick waits for the quiet at most (and never more than a fifth of the poll
interval: ``longest``)."""


def longest(interval: float) -> float:
    """Seconds a tick due every ``interval`` seconds waits for the quiet at most."""
    return min(LONGEST, interval / 5)


class Hush:
    """Whether this process is busy with answers right now (``PROCESS``: one per process), and
    the ticks held until it is quiet: one timer for all of them, however many wait."""

    __slots__ = ("_clock", "_held", "_loop", "_timer", "until")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.until = 0.0
        """The clock's time at which the busy spell ends (0: never busy yet)."""
        self._held: set[Callable[[], None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def busy(self) -> None:
        """A request ended now (its answer is being handed over)."""
        self.until = self._clock() + HUSH

    def left(self) -> float:
        """Seconds until the quiet (0 when quiet now)."""
        return max(0.0, self.until - self._clock())

    def hold(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` once it is quiet (unless ``release``d first)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (tests run one each): the old one's are gone
            self._loop, self._timer, self._held = loop, None, set()
        self._held.add(wake)
        if self._timer is None:
            self._timer = loop.call_later(self.left(), self._check)

    def release(self, wake: Callable[[], None]) -> None:
        self._held.discard(wake)

    def _check(self) -> None:
        left = self.left()
        if left > 0 and self._held:  # busy again since: look again when this spell ends
            assert self._loop is not None
            self._timer = self._loop.call_later(left, self._check)
            return
        self._timer = None
        held, self._held = self._held, set()
        for wake in held:
            wake()


PROCESS = Hush()
"""This process's: the CPU the answers and the ticks share is the process's."""
