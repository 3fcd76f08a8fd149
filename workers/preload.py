"""Importing, ahead of a worker's first job, what that job would otherwise import on its own.

A channel may name the modules its client needs (``client_modules``) when they take long to
import: the Teams SDK's models take about a second, which the first Teams post of every worker
process paid, so a step escalating to Teams posted a second after its time. A worker imports them
in a background thread as it starts; a job that needs one before then waits for that import.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Iterable

from channels.registry import CHANNELS

logger = logging.getLogger(__name__)


def client_modules(channels: Iterable[str]) -> list[str]:
    """The modules the clients of ``channels`` need, as their channels name them."""
    modules: list[str] = []
    for name in channels:
        channel = CHANNELS.get(name)
        if channel is not None:
            modules.extend(channel.client_modules)
    return modules


def preload_clients(channels: Iterable[str]) -> threading.Thread | None:
    """Import the client modules of ``channels`` in a daemon thread (``None``: none to import)."""
    modules = client_modules(channels)
    if not modules:
        return None

    def run() -> None:
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception:  # the first job imports it again and reports what is wrong
                logger.exception("could not preload %s", module)

    thread = threading.Thread(target=run, name="humangate-preload", daemon=True)
    thread.start()
    return thread
