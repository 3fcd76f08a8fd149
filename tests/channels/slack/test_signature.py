"""Slack's v0 request signature (pure): every way a request can be badly signed is refused with its
reason, and a good one passes only within five minutes, for its secret and its exact body."""

from __future__ import annotations

import hashlib
import hmac
import re

import pytest

from channels.slack.channel import verify_signature
from schemas.errors import SignatureError

CREATED = 1_800_000_000.0


def _signed(body: bytes, secret: str = "shh", timestamp: int = 1_800_000_000) -> dict[str, str]:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {"x-slack-request-timestamp": str(timestamp), "x-slack-signature": f"v0={digest}"}


@pytest.mark.parametrize(
    ("change", "now", "reason"),
    [
        ({"x-slack-signature": None}, CREATED, "X-Slack-Signature header is missing"),
        ({"x-slack-request-timestamp": None}, CREATED, "X-Slack-Request-Timestamp header is missing"),
        ({"x-slack-request-timestamp": "soon"}, CREATED, "must be a Unix time"),
        ({"x-slack-request-timestamp": "1" * 30}, CREATED, "must be a Unix time"),
        ({}, CREATED + 301, "more than 5 minutes"),
        ({}, CREATED - 301, "more than 5 minutes"),
        ({"x-slack-signature": "v0=zz"}, CREATED, "64 hex digits"),
        ({"x-slack-signature": "sha256=" + "0" * 64}, CREATED, "64 hex digits"),
        ({"x-slack-signature": "v0=" + "0" * 64}, CREATED, "does not match"),
    ],
)
def test_a_bad_signature_is_refused_with_its_reason(
    change: dict[str, str | None], now: float, reason: str
) -> None:
    body = b"payload=%7B%7D"
    headers = {k: v for k, v in (_signed(body) | change).items() if v is not None}
    with pytest.raises(SignatureError, match=re.escape(reason)):
        verify_signature("shh", headers, body, now)


def test_a_good_signature_passes_within_five_minutes_and_only_for_its_secret_and_body() -> None:
    body = b"payload=%7B%22type%22%3A%22block_actions%22%7D"
    verify_signature("shh", _signed(body), body, CREATED + 299)
    with pytest.raises(SignatureError):
        verify_signature("other", _signed(body), body, CREATED)
    with pytest.raises(SignatureError):
        verify_signature("shh", _signed(body), body + b"&x=1", CREATED)
    with pytest.raises(SignatureError, match="not UTF-8"):
        verify_signature("shh", _signed(b"\xff"), b"\xff", CREATED)
