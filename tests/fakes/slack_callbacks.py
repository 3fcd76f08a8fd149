"""Slack's callbacks to the gateway, built and signed exactly as Slack does: ``block_actions`` for a
click, ``view_submission`` for a modal, form-encoded as ``payload=<JSON>`` with the v0 signature
headers (HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the app's signing secret). ``Interactions``
sends the same payloads either that way or as Socket Mode envelopes, so a flow test runs in both."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx

from tests.fakes.slack import CHANNEL, SIGNING_SECRET, USERS, WAIT, FakeSlack


def sign(body: bytes, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    """Slack's v0 signature headers: HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the signing secret."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def form_body(payload: Mapping[str, Any]) -> bytes:
    """An interaction as Slack posts it: ``payload=<JSON>``, form-encoded."""
    return urlencode({"payload": json.dumps(payload)}).encode()


def user(user_id: str) -> dict[str, str]:
    handle = USERS[user_id].split()[0].lower()
    return {"id": user_id, "username": handle, "name": handle, "team_id": "T1"}


def click(message: Mapping[str, Any], action_id: str, user_id: str, hooks: str) -> dict[str, Any]:
    """The ``block_actions`` payload of a click on the button ``action_id`` of a posted message."""
    actions = next(b for b in message["blocks"] if b["type"] == "actions")
    button = next(e for e in actions["elements"] if e["action_id"] == action_id)
    return {
        "type": "block_actions",
        "user": user(user_id),
        "api_app_id": "A1",
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL},
        "trigger_id": f"{int(time.time())}.1.{user_id}{action_id}",
        "team": {"id": "T1", "domain": "fake"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": CHANNEL, "name": "approvals"},
        "message": dict(message),
        "state": {"values": {}},
        "response_url": f"{hooks}/hooks/T1/{user_id}/{action_id}",
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": actions["block_id"],
                "text": button["text"],
                "value": button.get("value"),
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def submission(view: Mapping[str, Any], values: Mapping[str, Any], user_id: str) -> dict[str, Any]:
    """The ``view_submission`` payload of a modal submitted with ``values`` (block id -> element state)."""
    return {
        "type": "view_submission",
        "team": {"id": "T1", "domain": "fake"},
        "user": user(user_id),
        "api_app_id": "A1",
        "token": "legacy-verification-token",
        "trigger_id": f"{int(time.time())}.2.{user_id}",
        "view": {
            "id": "V1",
            "team_id": "T1",
            **view,
            "state": {"values": {block: {"value": state} for block, state in values.items()}},
            "hash": "1.abc",
        },
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


async def send(
    gateway_url: str,
    payload: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> httpx.Response:
    """POST a signed interaction to the gateway, as Slack does (``headers`` replace the signature)."""
    raw = form_body(payload) if body is None else body
    sent = {"Content-Type": "application/x-www-form-urlencoded"} | (
        sign(raw) if headers is None else dict(headers)
    )
    async with httpx.AsyncClient(timeout=WAIT) as client:
        return await client.post(f"{gateway_url}/slack/events", content=raw, headers=sent)


@dataclass(frozen=True)
class Reply:
    """What Slack got back for an interaction: the body of the 200 over HTTP, or the payload of the
    envelope's ack over Socket Mode (``None``: a plain acknowledgement)."""

    status: int
    body: dict[str, Any] | None
    seconds: float
    """From sending the interaction to its reply."""

    def json(self) -> dict[str, Any]:
        """The reply's body (``{}`` for a plain acknowledgement)."""
        return self.body or {}


@dataclass(frozen=True)
class Interactions:
    """How a test's clicks reach the gateway, as Slack would send them: signed callbacks on
    ``/slack/events`` (``mode="http"``), or envelopes over Socket Mode (``"socket"``)."""

    mode: str
    slack: FakeSlack

    def env(self, **extra: str) -> dict[str, str]:
        """The gateway environment for this mode."""
        return self.slack.env(self.mode, **extra)

    async def send(self, gateway_url: str, payload: Mapping[str, Any]) -> Reply:
        """Send one interaction and wait for its reply."""
        if self.mode == "http":
            response = await send(gateway_url, payload)
            body = response.json() if response.content else None
            return Reply(response.status_code, body or None, response.elapsed.total_seconds())
        sockets = self.slack.sockets
        await sockets.connected()
        envelope_id = sockets.push(dict(payload))
        ack = await sockets.acked(envelope_id)
        return Reply(200, ack.payload or None, ack.seconds)
