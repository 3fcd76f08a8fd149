"""Slack's v0 request signature, checked by Bolt's verifier in the app's first middleware
(``SignedRequests``) on a fixed clock: every way a request can be badly signed is refused with a 401
and a ``SignatureError`` for the gateway to answer, and a good one passes only within five minutes,
for its secret and its exact body. Over Socket Mode nothing is checked (the connection is ours)."""

from __future__ import annotations

import hashlib
import hmac
from typing import cast

import pytest
from slack_bolt.async_app import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from channels.base import Desk
from channels.slack.exchange import EXCHANGE, Exchange
from channels.slack.middleware import BAD_SIGNATURE, SIGNATURE_WINDOW_SECONDS, SignedRequests
from schemas.errors import SignatureError

CREATED = 1_800_000_000.0
BODY = "payload=%7B%22type%22%3A%22block_actions%22%7D"


class _Clock:
    """The one part of a desk the verifier reads: its clock, standing still at ``now``."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        return self._now


def _signed(body: str, secret: str = "shh", timestamp: int = 1_800_000_000) -> dict[str, str]:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"x-slack-request-timestamp": str(timestamp), "x-slack-signature": f"v0={digest}"}


async def _verify(
    headers: dict[str, str],
    body: str = BODY,
    *,
    now: float = CREATED,
    secret: str = "shh",
    mode: str = "http",
) -> Exchange:
    """Run the middleware on one request; its exchange (``failure`` set when refused)."""
    exchange = Exchange(replay_key="sig", replay_window=SIGNATURE_WINDOW_SECONDS)
    request = AsyncBoltRequest(
        body=body if mode == "http" else {"type": "block_actions"},
        headers=dict(headers),
        context={EXCHANGE: exchange},
        mode=mode,
    )
    passed: list[bool] = []

    async def next_() -> BoltResponse:
        passed.append(True)
        return BoltResponse(status=200, body="")

    verification = SignedRequests(secret, cast(Desk, _Clock(now)))
    response = await verification.async_process(req=request, resp=BoltResponse(status=200), next=next_)
    assert (response.status == 200) == bool(passed) == (exchange.failure is None)
    return exchange


@pytest.mark.parametrize(
    ("change", "now"),
    [
        ({"x-slack-signature": None}, CREATED),
        ({"x-slack-request-timestamp": None}, CREATED),
        ({"x-slack-request-timestamp": "soon"}, CREATED),
        ({"x-slack-request-timestamp": "1" * 30}, CREATED),
        ({}, CREATED + 301),
        ({}, CREATED - 301),
        ({"x-slack-signature": "v0=zz"}, CREATED),
        ({"x-slack-signature": "sha256=" + "0" * 64}, CREATED),
        ({"x-slack-signature": "v0=" + "0" * 64}, CREATED),
    ],
)
async def test_a_bad_signature_is_refused_with_its_reason(change: dict[str, str | None], now: float) -> None:
    headers = {k: v for k, v in (_signed(BODY) | change).items() if v is not None}
    exchange = await _verify(headers, now=now)
    assert isinstance(exchange.failure, SignatureError)
    assert str(exchange.failure) == BAD_SIGNATURE


async def test_a_good_signature_passes_within_five_minutes_and_only_for_its_secret_and_body() -> None:
    assert (await _verify(_signed(BODY), now=CREATED + 299)).failure is None
    assert (await _verify(_signed(BODY), now=CREATED - 299)).failure is None
    assert isinstance((await _verify(_signed(BODY), secret="other")).failure, SignatureError)
    assert isinstance((await _verify(_signed(BODY), BODY + "&x=1")).failure, SignatureError)


async def test_an_envelope_over_socket_mode_needs_no_signature() -> None:
    assert (await _verify({}, mode="socket_mode")).failure is None
