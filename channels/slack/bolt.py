"""The one slack-bolt ``AsyncApp`` of this process, which every Slack interaction goes through, over
HTTP (``channels.slack.inbound``) and over Socket Mode (``channels.slack.sockets``).

It is built on first use, inside the running event loop, and kept in the channel's ``Desk.state``:

- its ``client`` is an ``AsyncWebClient`` at ``HUMANGATE_SLACK_API_URL`` with humangate's timeout and
  retries, and no token of its own: a client with a token makes Bolt call ``auth.test`` to authorize
  requests, while ``authorize`` here hands Bolt the bot token from the settings and calls nothing;
- its global middleware (``channels.slack.middleware``) verifies the signature (Bolt's verifier)
  before anything else, then refuses a body that is not an interaction, answers Slack's retries once
  and applies a replayed request or envelope once;
- its listeners are in ``channels.slack.listeners``: that is where a new one goes.

What one request carries besides Slack's body is its ``Exchange`` (``channels.slack.exchange``), put
in Bolt's context by the transport.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Desk
from channels.slack.client import API_TIMEOUT, api_base, retry_handlers
from channels.slack.listeners import add_listeners
from channels.slack.middleware import add_middleware, signed_requests

_APP = "bolt_app"
"""Where ``Desk.state`` keeps this process's Bolt app."""


class _TokenNote(logging.Filter):
    """Drops Bolt's warning that the client wins over ``token``: Bolt reads ``SLACK_BOT_TOKEN`` from
    the environment by itself, while humangate hands the token over through ``authorize`` on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("As you gave `client` as well")


bolt_logger = logging.getLogger(f"{__name__}.app")
"""The Bolt app's logger (its framework's own lines)."""
bolt_logger.addFilter(_TokenNote())


def slack_app(desk: Desk) -> AsyncApp:
    """This process's Bolt app for ``desk``'s Slack channel, built on first use (call it from the
    running event loop)."""
    app = desk.state.get(_APP)
    if not isinstance(app, AsyncApp):
        app = desk.state[_APP] = build_app(desk)
    return app


def build_app(desk: Desk) -> AsyncApp:
    """A Bolt app answering Slack's requests with ``desk``."""
    settings = desk.settings
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None

    async def authorize(enterprise_id: str | None, team_id: str | None, **_: Any) -> AuthorizeResult:
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

    client = AsyncWebClient(
        base_url=api_base(settings), timeout=int(API_TIMEOUT), retry_handlers=retry_handlers()
    )
    app = AsyncApp(
        client=client,
        authorize=authorize,
        # A non-empty secret keeps Bolt from reading SLACK_SIGNING_SECRET from the environment itself.
        signing_secret="unused: verified by channels.slack.middleware.SignedRequests",
        # Bolt's own verifier, run by SignedRequests before authorize: its refusal is Slack's plain
        # 401 with the reason, and a malformed timestamp is a 401 too, not Bolt's 500.
        request_verification_enabled=False,
        before_authorize=signed_requests(desk),
        ssl_check_enabled=False,  # Slack's ssl_check is for slash commands, which humangate has none of
        # The listeners ack with what they return (a submission's errors), and hand a click's work
        # to a task of their own (channels.slack.interactions), so nothing waits for a poll.
        process_before_response=True,
        name="humangate",
        logger=bolt_logger,
    )
    add_middleware(app, desk)
    add_listeners(app, desk)
    return app
