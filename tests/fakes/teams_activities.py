"""Teams activities for tests: clicks on a card built as Teams builds them (an ``adaptiveCard/action``
invoke, or the ``Action.Submit`` fallback's message), filled in as a person would, and sent to the
gateway with the JWT Bot Framework would sign (``FakeTeams.sign``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from tests.fakes.teams import ADA, APP_ID, CONVERSATION, TENANT_ID, WAIT, FakeTeams, Person, dumps


def actions(card: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Title -> action of every button of a card."""
    return {str(action.get("title")): dict(action) for action in card.get("actions") or []}


def inputs(card: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every input of a card, in order (containers included)."""

    def walk(elements: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for element in elements:
            if str(element.get("type", "")).startswith("Input."):
                yield element
            yield from walk(element.get("items") or [])

    yield from walk(list(card.get("body") or []))


def fill(card: Mapping[str, Any], answers: Mapping[str, Any]) -> dict[str, str]:
    """The input values Teams sends for ``card`` after a person typed ``answers`` (by label): text for
    text, number, date and time inputs, ``True``/``False`` for toggles, option titles for choice
    sets. Inputs not named keep what they show; empty ones are not sent, as Teams does."""
    values: dict[str, str] = {}
    label: Any  # any JSON value, looked up only when it is one of the answers' labels
    for element in inputs(card):
        label, kind = element.get("label"), element["type"]
        if label in answers:
            given = answers[label]
            if kind == "Input.Toggle":
                value = element["valueOn"] if given else element["valueOff"]
            elif kind == "Input.ChoiceSet":
                titles = [given] if isinstance(given, str) else list(given)
                by_title = {choice["title"]: choice["value"] for choice in element["choices"]}
                value = ",".join(by_title[title] for title in titles)
            else:
                value = str(given)
        else:
            value = str(element.get("value", ""))
        if value:
            values[element["id"]] = value
    return values


def base(fake: FakeTeams, kind: str, card_id: str, user: Person) -> dict[str, Any]:
    """The fields every activity from a Teams channel has."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    return {
        "type": kind,
        "id": f"f:{uuid.uuid4()}",
        "timestamp": now,
        "localTimestamp": now,
        "channelId": "msteams",
        "serviceUrl": fake.service_url,
        "from": {"id": user.teams_id, "name": user.name, "aadObjectId": user.aad_id},
        "conversation": {
            "isGroup": True,
            "conversationType": "channel",
            "tenantId": TENANT_ID,
            "id": f"{CONVERSATION};messageid={card_id}",
        },
        "recipient": {"id": f"28:{APP_ID}", "name": "humangate"},
        "entities": [
            {"locale": "en-US", "platform": "Web", "timezone": "Europe/London", "type": "clientInfo"}
        ],
        "channelData": {
            "tenant": {"id": TENANT_ID},
            "channel": {"id": CONVERSATION},
            "source": {"name": "message"},
            "legacy": {"replyToId": card_id},
        },
        "replyToId": card_id,
        "locale": "en-US",
        "localTimezone": "Europe/London",
    }


def invoke(
    fake: FakeTeams,
    posted: Mapping[str, Any],
    title: str,
    answers: Mapping[str, Any] | None = None,
    *,
    user: Person = ADA,
    card: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``adaptiveCard/action`` invoke of clicking ``title`` on ``card`` (default: the posted one)."""
    shown = card if card is not None else card_of_posted(posted)
    action = actions(shown)[title]
    assert action["type"] == "Action.Execute", action
    data = dict(action["data"])
    if action.get("associatedInputs", "auto") == "auto":
        data |= fill(shown, answers or {})
    activity = base(fake, "invoke", str(posted["id"]), user)
    activity["name"] = "adaptiveCard/action"
    activity["value"] = {
        "action": {"type": "Action.Execute", "title": title, "verb": action["verb"], "data": data},
        "trigger": "manual",
    }
    return activity


def submit(
    fake: FakeTeams,
    posted: Mapping[str, Any],
    title: str,
    answers: Mapping[str, Any] | None = None,
    *,
    user: Person = ADA,
) -> dict[str, Any]:
    """The message a host without Universal Actions sends for the ``Action.Submit`` fallback."""
    shown = card_of_posted(posted)
    fallback = actions(shown)[title]["fallback"]
    data = dict(fallback["data"])
    if fallback.get("associatedInputs", "auto") == "auto":
        data |= fill(shown, answers or {})
    activity = base(fake, "message", str(posted["id"]), user)
    activity["text"] = ""
    activity["value"] = data
    return activity


def card_of_posted(posted: Mapping[str, Any]) -> dict[str, Any]:
    card: dict[str, Any] = posted["attachments"][0]["content"]
    return card


async def send(
    gateway_url: str,
    fake: FakeTeams,
    activity: Mapping[str, Any] | bytes,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """POST an activity to ``/teams/messages`` as the Bot Connector does (``headers`` replace the
    Authorization header; ``token`` replaces the signed JWT)."""
    raw = activity if isinstance(activity, bytes) else dumps(dict(activity))
    if headers is None:
        signed = (
            token if token is not None else fake.sign(dict(activity) if isinstance(activity, Mapping) else {})
        )
        headers = {"Authorization": f"Bearer {signed}"}
    sent = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "Microsoft-SkypeBotApi"} | dict(
        headers
    )
    async with httpx.AsyncClient(timeout=WAIT) as client:
        return await client.post(f"{gateway_url}/teams/messages", content=raw, headers=sent)
