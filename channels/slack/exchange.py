"""What a transport knows of one Slack request that Slack's body does not say, carried to the Bolt
app's middleware and listeners in Bolt's context (``EXCHANGE``): how to recognise the request again,
how long a call that found Redis away may be tried again, and what went wrong, which the transport
answers as it must (the gateway's 400/401/503 over HTTP, words for the person over Socket Mode).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

EXCHANGE = "humangate_exchange"
"""The key of a request's ``Exchange`` in Bolt's context."""


@dataclass
class Exchange:
    """What the transport knows of one request that Slack's body does not say."""

    replay_key: str
    """What a replay of this request repeats: its signature over HTTP, its envelope id over Socket
    Mode (``Desk.first_delivery``)."""
    replay_window: int
    """Seconds ``replay_key`` is remembered."""
    deadline: float | None = None
    """``time.monotonic()`` until which a call that found Redis away is tried again (Socket Mode's
    ack budget); ``None``: not retried (HTTP answers 503 and Slack's person clicks again)."""
    refusal: str | None = None
    """Why the body is not an interaction Slack sends, refused once the signature is verified."""
    failure: Exception | None = None
    """What went wrong in a middleware or a listener; the transport answers it."""

    def retries_left(self) -> bool:
        """Whether a call that found Redis away may be tried again."""
        return self.deadline is not None and time.monotonic() < self.deadline


def exchange_of(context: Any) -> Exchange:
    """The ``Exchange`` the transport put in a Bolt request's context."""
    exchange = context.get(EXCHANGE)
    if not isinstance(exchange, Exchange):
        raise RuntimeError("a Slack request reached the Bolt app without its exchange")
    return exchange
