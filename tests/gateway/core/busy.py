"""A process busy with answers for as long as a test wants: ``gateway.core.hush`` on a clock that
stands still until the test moves it, so no load on the machine can make it quiet early."""

from __future__ import annotations

from gateway.core import hush


class StillClock:
    """A clock that shows the same time until ``move``d."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def move(self, seconds: float) -> None:
        self.now += seconds


def busy_until_moved() -> tuple[hush.Hush, StillClock]:
    """A ``Hush`` marked busy on a ``StillClock``: busy until the clock moves ``hush.HUSH``."""
    clock = StillClock()
    quiet = hush.Hush(clock)
    quiet.busy()
    return quiet, clock
