"""``POST /slack/events``: Slack's interactivity requests, verified, de-duplicated, then answered by
``channels.slack.interactions.respond``, the same code that answers an envelope read over Socket Mode
(``channels.slack.sockets``).

Before ``respond`` sees a request:

1. the gateway's webhook opening answers 404 naming the missing settings when Slack is not
   configured, and verifies Slack's v0 signature (``SlackChannel.verify``): a missing, malformed,
   stale or wrong one is a 401 with a short plain body, never a 500. Without
   ``SLACK_SIGNING_SECRET`` (Socket Mode only) every request is such a 401: an unsigned callback
   never answers anything;
2. this route refuses a body that is neither a form-encoded ``payload`` nor a JSON event (400);
3. and acknowledges, without applying, Slack's retries (``X-Slack-Retry-Num``) and replays of a
   signature already seen (``Desk.first_delivery``).

What ``respond`` returns is the body of the 200 (empty for a plain acknowledgement).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.base import Desk, Inbound
from channels.slack.actions import hf_id_of
from channels.slack.interactions import respond
from channels.slack.signature import SIGNATURE_WINDOW_SECONDS
from schemas.errors import InvalidJsonError, InvalidRequestError
from schemas.json_text import NOT_UTF8, read_json

logger = logging.getLogger(__name__)


async def slack_events(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """A verified Slack request: de-duplicated, then answered as every transport's interactions are."""
    headers, body = inbound.headers, inbound.body
    try:
        payload = read_payload(headers.get("content-type", ""), body)
    except ValueError as exc:
        raise InvalidRequestError(str(exc)) from None
    hf_id = hf_id_of(payload)
    if "x-slack-retry-num" in headers:
        logger.info("acknowledged a Slack retry hf=%s channel=slack; not applied again", hf_id)
        return Response(status_code=200)
    if not await desk.first_delivery(headers["x-slack-signature"], SIGNATURE_WINDOW_SECONDS):
        logger.warning("acknowledged a replayed Slack request hf=%s channel=slack; not applied", hf_id)
        return Response(status_code=200)
    reply = await respond(desk, payload)
    return JSONResponse(reply) if reply else Response(status_code=200)


def read_payload(content_type: str, body: bytes) -> dict[str, Any]:
    """The interaction (form field ``payload``) or event (JSON body) a Slack request carries."""
    try:
        if "application/json" in content_type:
            data = read_json(body)
        elif "application/x-www-form-urlencoded" in content_type:
            fields = parse_qs(body.decode(), max_num_fields=10)
            if len(fields.get("payload", [])) != 1:
                raise ValueError("the form must have one payload field")
            data = read_json(fields["payload"][0])
        else:
            raise ValueError("the body must be form-encoded (an interaction) or JSON (an event)")
    except UnicodeDecodeError:
        raise ValueError(f"the body {NOT_UTF8}") from None
    except InvalidJsonError as exc:
        raise ValueError(f"the payload {exc.rule}") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ValueError("the payload must be a JSON object with a type")
    return data
