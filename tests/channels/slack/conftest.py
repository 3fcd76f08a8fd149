"""Every Slack flow runs twice: clicks as signed callbacks on ``/slack/events``, and as envelopes
over Socket Mode (one handler, two transports)."""

from __future__ import annotations

import pytest

from tests.fakes.slack import FakeSlack
from tests.fakes.slack_callbacks import Interactions


@pytest.fixture(params=["http", "socket"])
def slack_via(request: pytest.FixtureRequest, slack: FakeSlack) -> Interactions:
    """How this run's clicks reach the gateway (``slack_via.env()`` configures the gateway for it)."""
    return Interactions(str(request.param), slack)
