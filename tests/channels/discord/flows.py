"""Helpers of the Discord end-to-end tests: the fake Discord per test, asking, reading outcomes."""

from __future__ import annotations

from typing import Any

from tests.conftest import GatewayProcess
from tests.fakes.discord import FakeDiscord
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
