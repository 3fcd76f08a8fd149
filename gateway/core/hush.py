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
    """Whether this process is busy with answers right now (``PROCESS``: one per process)."""

    __slots__ = ("_clock", "until")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.until = 0.0
        """The clock's time at which the busy spell ends (0: never busy yet)."""

    def busy(self) -> None:
        """A request ended now (its answer is being handed over)."""
        self.until = self._clock() + HUSH

    def left(self) -> float:
        """Seconds until the quiet (0 when quiet now)."""
        return max(0.0, self.until - self._clock())

    def now(self) -> float:
        return self._clock()


PROCESS = Hush()
"""This process's: the CPU the answers and the ticks share is the process's."""
