"""Every Discord flow runs in both modes: interactions posted to ``/discord/interactions`` and read
from the Gateway go through the same handler (``channels.discord.inbound.respond``)."""

from __future__ import annotations

import pytest

from tests.channels.discord.flows import Transport
from tests.fakes.discord import FakeDiscord


@pytest.fixture(params=["http", "gateway"])
def transport(request: pytest.FixtureRequest, discord: FakeDiscord) -> Transport:
    """How this test's interactions reach the gateway."""
    return Transport(str(request.param), discord)
