"""``POST /slack/events``: Slack's interactivity requests, served by the process's Bolt app
(``channels.slack.bolt``) through Bolt's Starlette/FastAPI adapter, ``AsyncSlackRequestHandler``.

Before Bolt sees a request, the gateway's webhook opening answers 404 naming the missing settings
when Slack is not configured, bounds the body (413) and refuses with a 401 what cannot be a signed
Slack request at all (``SlackChannel.verify``: no ``SLACK_SIGNING_SECRET``, so an unsigned callback
never answers anything; a body that is not UTF-8). A body whose JSON breaks humangate's rules
(``schemas.json_text``: nesting, number sizes, NaN) is a 400 here, before Bolt's parser, which has
no bounds. In the app, Bolt's verifier checks the signature and timestamp (401), then the middleware
refuses a body that is no interaction (400), acknowledges Slack's retries (``X-Slack-Retry-Num``)
and replays of a signature already seen without applying them, and a listener answers.

What a listener acks with is the body of the 200 (empty for a plain acknowledgement); what went
wrong is raised here, for the gateway to answer (400, 401, or 503 while Redis is away).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from starlette.requests import Request
from starlette.responses import Response

from channels.base import Desk, Inbound
from channels.slack.bolt import slack_app
from channels.slack.exchange import EXCHANGE, Exchange
from channels.slack.middleware import SIGNATURE_WINDOW_SECONDS
from schemas.errors import InvalidJsonError, InvalidRequestError
from schemas.json_text import NOT_UTF8, read_json


async def slack_events(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """A Slack request, answered by the Bolt app; its failure raised for the gateway to answer."""
    exchange = Exchange(
        replay_key=inbound.headers.get("x-slack-signature", ""), replay_window=SIGNATURE_WINDOW_SECONDS
    )
    exchange.refusal = refusal(inbound.headers.get("content-type", ""), inbound.body)
    response = await AsyncSlackRequestHandler(slack_app(desk)).handle(request, {EXCHANGE: exchange})
    if exchange.failure is not None:
        raise exchange.failure
    return response


def refusal(content_type: str, body: bytes) -> str | None:
    """Why ``body`` is no interaction or event Slack sends, for the middleware to refuse once the
    signature is verified (``None``: it is one). A body with something Bolt would parse (JSON, a
    ``payload`` field) that breaks humangate's rules is refused at once (``InvalidRequestError``):
    Bolt's parser must never see it."""
    try:
        text = body.decode()
    except UnicodeDecodeError:
        raise InvalidRequestError(f"the body {NOT_UTF8}") from None
    if "application/json" in content_type or text.startswith("{"):
        data = _json(text)
    elif "payload" in text:  # Bolt reads a payload field whatever the content type says
        try:
            payloads = parse_qs(text, max_num_fields=10).get("payload", [])
        except ValueError:
            raise InvalidRequestError("the form must have at most 10 fields") from None
        if len(payloads) != 1:
            raise InvalidRequestError("the form must have one payload field")
        data = _json(payloads[0])
    elif "application/x-www-form-urlencoded" in content_type:
        return "the form must have one payload field"
    else:
        return "the body must be form-encoded (an interaction) or JSON (an event)"
    if not isinstance(data, dict):
        raise InvalidRequestError("the payload must be a JSON object with a type")
    if not isinstance(data.get("type"), str):
        return "the payload must be a JSON object with a type"
    return None


def _json(text: str) -> Any:
    try:
        return read_json(text)
    except InvalidJsonError as exc:
        raise InvalidRequestError(f"the payload {exc.rule}") from None
