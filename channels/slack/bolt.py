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

What one request carries besides Slack's body is its ``Exchange``, put in Bolt's context by the
transport: how to recognise it again, how long it may be retried, and what went wrong, which the
transport answers as it must (the gateway's 400/401/503 over HTTP, words for the person over Socket
Mode).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import Desk
from channels.slack.client import API_TIMEOUT, api_base, retry_handlers

EXCHANGE = "humangate_exchange"
"""The key of a request's ``Exchange`` in Bolt's context."""

_APP = "bolt_app"
"""Where ``Desk.state`` keeps this process's Bolt app."""


@dataclass
class Exchange:
    """What the transport knows of one request that Slack's body does not say."""

    replay_key: str
    """What a replay of this request repeats: its signature over HTTP, its envelope id over Socket
    Mode (``Desk.first_delivery``)."""
    replay_window: int
    """Seconds ``replay_key`` is remembered."""
    deadline: float | None = None
    """``time.monotonic()`` until which a call that found Redis away is tried again (Socket Mode's
    ack budget); ``None``: not retried (HTTP answers 503 and Slack's person clicks again)."""
    refusal: str | None = None
    """Why the body is not an interaction Slack sends, refused once the signature is verified."""
    failure: Exception | None = None
    """What went wrong in a middleware or a listener; the transport answers it."""

    def retries_left(self) -> bool:
        """Whether a call that found Redis away may be tried again."""
        return self.deadline is not None and time.monotonic() < self.deadline


def exchange_of(context: Any) -> Exchange:
    """The ``Exchange`` the transport put in a Bolt request's context."""
    exchange = context.get(EXCHANGE)
    if not isinstance(exchange, Exchange):
        raise RuntimeError("a Slack request reached the Bolt app without its exchange")
    return exchange


def slack_app(desk: Desk) -> AsyncApp:
    """This process's Bolt app for ``desk``'s Slack channel, built on first use (call it from the
    running event loop)."""
    app = desk.state.get(_APP)
    if not isinstance(app, AsyncApp):
        app = desk.state[_APP] = build_app(desk)
    return app


def build_app(desk: Desk) -> AsyncApp:
    """A Bolt app answering Slack's requests with ``desk``."""
    # Imported here: both import this module's names.
    from channels.slack.listeners import add_listeners
    from channels.slack.middleware import add_middleware, signed_requests

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
    )
    add_middleware(app, desk)
    add_listeners(app, desk)
    return app
