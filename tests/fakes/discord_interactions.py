"""Discord interactions for tests: clicks, select choices and modal submits built as Discord builds
them, and signed as Discord signs them (Ed25519 over ``timestamp + body``, hex in
``X-Signature-Ed25519``) with the fake's test key.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from typing import Any

import httpx
from nacl.signing import SigningKey

from tests.fakes.discord import ADA, APPLICATION_ID, CHANNEL_ID, GUILD_ID, SIGNING_KEY, WAIT, Person


def sign(body: bytes, *, timestamp: int | None = None, key: SigningKey = SIGNING_KEY) -> dict[str, str]:
    """Discord's signature headers for ``body``."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = key.sign(stamp.encode() + body).signature.hex()
    return {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": stamp}


_interaction_ids = itertools.count(1700000000000000001)


def interaction(
    kind: int, data: Mapping[str, Any] | None, *, user: Person = ADA, message: Any = None
) -> dict[str, Any]:
    """An interaction as Discord sends one from a server channel."""
    interaction_id = str(next(_interaction_ids))
    body: dict[str, Any] = {
        "id": interaction_id,
        "application_id": APPLICATION_ID,
        "type": kind,
        "token": f"interaction-token-{interaction_id}",
        "version": 1,
        "guild_id": GUILD_ID,
        "channel_id": CHANNEL_ID,
        "channel": {"id": CHANNEL_ID, "type": 0, "name": "approvals", "guild_id": GUILD_ID},
        "member": {
            "user": {
                "id": user.id,
                "username": user.name.lower(),
                "global_name": user.name,
                "discriminator": "0",
            },
            "roles": list(user.roles),
            "nick": None,
            "permissions": "2248473465835073",
            "joined_at": "2024-01-01T00:00:00+00:00",
        },
        "app_permissions": "2248473465835073",
        "attachment_size_limit": 10485760,
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": GUILD_ID},
        "context": 0,
    }
    if data is not None:
        body["data"] = dict(data)
    if message is not None:
        body["message"] = message
    return body


def click(
    message: Mapping[str, Any], custom_id: str, *, user: Person = ADA, values: list[str] | None = None
) -> dict[str, Any]:
    """A MESSAGE_COMPONENT interaction: a button click, or a select choice when ``values`` is given."""
    data: dict[str, Any] = {"custom_id": custom_id, "component_type": 2}
    if values is not None:
        data = {"custom_id": custom_id, "component_type": 3, "values": values}
    return interaction(3, data, user=user, message=dict(message))


def buttons(message: Mapping[str, Any]) -> dict[str, str]:
    """Label -> custom id of every button of a message (or ephemeral reply)."""
    return {
        item["label"]: item.get("custom_id", item.get("url", ""))
        for row in message.get("components") or []
        for item in row.get("components") or []
        if item["type"] == 2
    }


def submit(
    modal: Mapping[str, Any], answers: Mapping[str, Any], *, user: Person = ADA, message: Any = None
) -> dict[str, Any]:
    """A MODAL_SUBMIT of ``modal`` (as the gateway sent it) filled as a person would, by field label:
    text for a text input, an option label (or labels) for a radio group, select or checkbox group,
    ``True``/``False`` for a checkbox. Fields not named are left as Discord leaves them."""
    components = []
    for index, top in enumerate(modal["components"]):
        inner = top["component"]
        given = answers.get(top["label"])
        by_label = {option["label"]: option["value"] for option in inner.get("options") or []}
        submitted: dict[str, Any] = {
            "type": inner["type"],
            "id": index * 2 + 2,
            "custom_id": inner["custom_id"],
        }
        if inner["type"] == 4:
            submitted["value"] = "" if given is None else str(given)
        elif inner["type"] == 21:
            submitted["value"] = by_label[given] if given is not None else None
        elif inner["type"] in (3, 22):
            chosen = [given] if isinstance(given, str) else list(given or [])
            submitted["values"] = [by_label[label] for label in chosen]
        elif inner["type"] == 23:
            submitted["value"] = bool(given)
        components.append({"type": 18, "id": index * 2 + 1, "component": submitted})
    data = {"custom_id": modal["custom_id"], "components": components}
    return interaction(5, data, user=user, message=message)


async def send(
    gateway_url: str,
    body: Mapping[str, Any] | bytes,
    *,
    headers: Mapping[str, str] | None = None,
    timestamp: int | None = None,
    key: SigningKey = SIGNING_KEY,
) -> httpx.Response:
    """POST an interaction to the gateway, signed as Discord signs it (``headers`` replace the signature)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = sign(raw, timestamp=timestamp, key=key) if headers is None else dict(headers)
    sent = {"Content-Type": "application/json", "User-Agent": "Discord-Interactions/1.0"} | sent
    async with httpx.AsyncClient(timeout=WAIT) as client:
        return await client.post(f"{gateway_url}/discord/interactions", content=raw, headers=sent)
