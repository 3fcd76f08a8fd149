"""Slack's v0 request signature: HMAC-SHA256 of ``v0:{timestamp}:{raw body}`` with the signing secret."""

from __future__ import annotations

from collections.abc import Mapping

from slack_sdk.signature import Clock, SignatureVerifier

from schemas.errors import SignatureError

SIGNATURE_WINDOW_SECONDS = 300
"""How old (or how far in the future) a signed Slack request may be: Slack's five minutes."""

_SIGNATURE_LENGTH = len("v0=") + 64


class _At(Clock):
    """slack-sdk's verifier clock, fixed at the caller's (injectable) ``now``."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def verify_signature(secret: str, headers: Mapping[str, str], body: bytes, now: float) -> None:
    """Raise ``SignatureError`` unless ``body`` carries Slack's v0 signature and is fresh.

    ``headers`` has lower-case names. Slack signs ``v0:{timestamp}:{raw body}`` with HMAC-SHA256 and
    the app's signing secret; a request more than five minutes from ``now`` is refused (replays of a
    fresh one are the job of ``Desk.first_delivery``).
    """
    timestamp = headers.get("x-slack-request-timestamp", "").strip()
    signature = headers.get("x-slack-signature", "").strip()
    if not timestamp:
        raise SignatureError("the X-Slack-Request-Timestamp header is missing")
    if not signature:
        raise SignatureError("the X-Slack-Signature header is missing")
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        raise SignatureError("X-Slack-Request-Timestamp must be a Unix time in seconds")
    if abs(now - int(timestamp)) > SIGNATURE_WINDOW_SECONDS:
        raise SignatureError("X-Slack-Request-Timestamp is more than 5 minutes away from now")
    hex_part = signature[3:]
    if not signature.startswith("v0=") or len(signature) != _SIGNATURE_LENGTH or not _is_hex(hex_part):
        raise SignatureError("X-Slack-Signature must be v0= followed by 64 hex digits")
    try:
        valid = SignatureVerifier(secret, clock=_At(now)).is_valid(body, timestamp, signature)
    except UnicodeDecodeError:
        raise SignatureError("the body is not UTF-8, so it cannot be a signed Slack request") from None
    if not valid:
        raise SignatureError("X-Slack-Signature does not match the body (check SLACK_SIGNING_SECRET)")


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text.lower())
