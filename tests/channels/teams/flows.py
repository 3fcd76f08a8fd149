"""Helpers of the Teams end-to-end tests: asking on Teams, reading the cards it shows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tests.conftest import GatewayProcess
from tests.fakes.teams import FakeTeams
from tests.gateway.flows import PendingCall, start_call

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
OUTCOMES = ("Approved", "Not approved", "Answered", "Declined", "Canceled", "Withdrawn", "Expired")


def texts(card: Mapping[str, Any]) -> Iterator[str]:
    """Every text a card shows, in order: runs of rich text blocks and text blocks."""

    def walk(elements: list[dict[str, Any]]) -> Iterator[str]:
        for element in elements:
            if element.get("type") == "RichTextBlock":
                yield "".join(run["text"] for run in element["inlines"])
            elif element.get("type") == "TextBlock":
                yield element["text"]
            yield from walk(element.get("items") or [])

    yield from walk(list(card.get("body") or []))


def outcome_of(card: Mapping[str, Any]) -> str:
    """The outcome line of a card (empty while pending)."""
    return next((text for text in texts(card) if text.startswith(OUTCOMES)), "")


def reply_card(body: Mapping[str, Any]) -> dict[str, Any]:
    """The card of an ``adaptiveCard/action`` invoke response."""
    assert body["statusCode"] == 200 and body["type"] == "application/vnd.microsoft.card.adaptive", body
    card: dict[str, Any] = body["value"]
    return card


async def ask(
    gateway: GatewayProcess, teams: FakeTeams, message: str, schema: dict[str, Any]
) -> tuple[PendingCall, dict[str, Any]]:
    """Start an ``elicit`` call on Teams; returns it and the activity it posted, once posted."""
    count = len(teams.stored()) + 1
    call = start_call(gateway.url, {"message": message, "schema": schema, "uiType": "teams"})
    return call, (await teams.posted(count))[-1]
