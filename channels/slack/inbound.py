"""``POST /slack/events``: Slack's interactivity requests, verified, de-duplicated, then slack-bolt.

Before bolt sees a request:

1. the gateway's webhook opening answers 404 naming the missing settings when Slack is not
   configured, and verifies Slack's v0 signature (``SlackChannel.verify``): a missing, malformed,
   stale or wrong one is a 401 with a short plain body, never a 500 (bolt's own check is then off:
   once is enough);
2. this route refuses a body that is neither a form-encoded ``payload`` nor a JSON event (400);
3. and acknowledges, without applying, Slack's retries (``X-Slack-Retry-Num``) and replays of a
   signature already seen (``Desk.first_delivery``).

Bolt then acks within Slack's 3 s and runs the listeners of ``channels.slack.interactions``.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import parse_qs

from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request, to_starlette_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request
from starlette.responses import Response

from channels.base import Desk, Inbound
from channels.slack.actions import hf_id_of
from channels.slack.blocks import ACTION_PREFIX
from channels.slack.client import API_TIMEOUT, api_base
from channels.slack.interactions import handle_click, handle_submission
from channels.slack.signature import SIGNATURE_WINDOW_SECONDS
from schemas.errors import InvalidJsonError, InvalidRequestError
from schemas.json_text import NOT_UTF8, read_json
from schemas.settings import Settings

logger = logging.getLogger(__name__)

DESK_KEY = "humangate_desk"
"""Where the listeners find the Slack channel's ``Desk`` in bolt's context."""
_OURS = re.compile("^" + re.escape(ACTION_PREFIX))


async def slack_events(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """A verified Slack request: de-duplicated, then handed to bolt."""
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
    bolt = _bolt(desk)
    response = await bolt.async_dispatch(to_async_bolt_request(request, body, {DESK_KEY: desk}))
    return to_starlette_response(response)


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


def build_bolt(settings: Settings) -> AsyncApp:
    """The slack-bolt app of this process: its listeners, and no start-up or per-request Slack calls.

    The bot token is handed over by ``authorize`` (bolt's single-team default would call
    ``auth.test`` on the first request, inside Slack's 3 s; ``humangate doctor`` checks it instead).
    """
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None

    async def authorize(
        enterprise_id: str | None, team_id: str | None, user_id: str | None
    ) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, user_id=user_id, bot_token=token)

    bolt_logger = logging.getLogger("gateway.slack_bolt")
    bolt_logger.addFilter(_TokenFromEnvironment())
    app = AsyncApp(
        name="humangate",
        client=AsyncWebClient(base_url=api_base(settings), timeout=int(API_TIMEOUT)),
        authorize=authorize,
        signing_secret="",  # unused: verified by the route, before anything else
        request_verification_enabled=False,
        process_before_response=False,
        logger=bolt_logger,
    )

    async def on_click(ack: Any, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        await handle_click(context[DESK_KEY], body)

    async def on_submission(ack: Any, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack(**await handle_submission(context[DESK_KEY], body))

    app.action(_OURS)(on_click)
    app.view(_OURS)(on_submission)
    return app


class _TokenFromEnvironment(logging.Filter):
    """Bolt reads ``SLACK_BOT_TOKEN`` from the environment itself and warns that the client we give
    it wins; that is the intent (the token reaches it through ``authorize``), so the warning is
    dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != warning_client_prioritized_and_token_skipped()


def _bolt(desk: Desk) -> AsyncApp:
    bolt: AsyncApp | None = desk.state.get("bolt")
    if bolt is None:
        bolt = desk.state["bolt"] = build_bolt(desk.settings)
    return bolt
