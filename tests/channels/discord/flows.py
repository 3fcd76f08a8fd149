"""Helpers of the Discord end-to-end tests: the fake Discord per test, asking, reading outcomes, and
the two transports an interaction may take (``Transport``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.conftest import GatewayProcess
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord_interactions import send
from tests.gateway.flows import PendingCall, start_call

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


def outcome_of(body: dict[str, Any]) -> str:
    """The outcome line of a message (empty while pending)."""
    fields = body["embeds"][0].get("fields") or []
    return next((f["value"] for f in fields if f["name"] == "Outcome"), "")


async def ask(
    gateway: GatewayProcess, discord: FakeDiscord, message: str, schema: dict[str, Any]
) -> tuple[PendingCall, dict[str, Any]]:
    """Start an ``elicit`` call on Discord; returns it and the message it posted, once posted."""
    count = len(discord.stored()) + 1
    call = start_call(gateway.url, {"message": message, "schema": schema, "uiType": "discord"})
    return call, (await discord.posted(count))[-1]


@dataclass(frozen=True)
class Transport:
    """How interactions reach the gateway in a test: ``http``, signed POSTs to
    ``/discord/interactions`` (the response is the body); ``gateway``, ``INTERACTION_CREATE`` over the
    fake Gateway (the response is what the gateway posts to the interaction callback)."""

    mode: str
    discord: FakeDiscord

    def env(self, **extra: str) -> dict[str, str]:
        """The gateway environment for this transport (``gateway``: no public key)."""
        return self.discord.env(inbound=self.mode, **extra)

    async def send(self, gateway: GatewayProcess, interaction: dict[str, Any]) -> dict[str, Any]:
        """Deliver ``interaction`` and return the interaction response it got."""
        if self.mode == "gateway":
            return await self.discord.interact(interaction)
        response = await send(gateway.url, interaction)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body
