"""Fixtures of the gateway tests: the fake platform APIs, one running server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.fakes.teams import FakeTeams


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """A fake Slack Web API (point a gateway at it with ``**slack.env()``)."""
    with FakeSlack().running() as fake:
        yield fake


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    """A fake Discord REST API (point a gateway at it with ``**discord.env()``)."""
    fake = FakeDiscord()
    with fake.server.running():
        yield fake


@pytest.fixture
def teams() -> Iterator[FakeTeams]:
    """A fake Bot Connector, token endpoint and OpenID metadata (point a gateway at it with
    ``**teams.env()``)."""
    fake = FakeTeams()
    with fake.server.running():
        yield fake
