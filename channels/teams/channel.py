"""The Microsoft Teams channel: Adaptive Cards with Universal Actions, posted by a bot.

The request is posted proactively to ``HUMANGATE_TEAMS_CONVERSATION`` with the bot's own token
(``channels.teams.connector``); clicks come back to ``/teams/messages`` as Bot Framework activities
(``channels.teams.inbound``), whose JWT ``verify`` checks against the keys of the OpenID metadata
(``channels.teams.auth``). Rendering (``channels.teams.card``) and parsing
(``channels.teams.actions``) are pure.

One card per request: Teams offers no idempotent post and a bot cannot read a channel's history, so
a post is retried (here or by the delivery job) only after failures that mean nothing was posted;
one that may have been posted without Teams saying so (a timeout, a 500) is not posted again. A
retried job therefore meets ``delivery_attempts > 1`` only after such safe failures, or after a
worker died between posting and recording the post, which no bot can detect.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from channels.base import Desk, Endpoint, Inbound, Opening, RenderContext
from channels.teams.actions import answer_of, card_action, identity, person
from channels.teams.auth import SigningKeys, Verified, bearer_token, key_id, verify_activity
from channels.teams.card import oversized_card, render_card, summary_of
from schemas.errors import DeliveryError, InvalidAnswerError, SignatureError
from schemas.models import Answer, HumanFunction, Person
from schemas.settings import Settings

if TYPE_CHECKING:
    # Imported where used: the Bot Framework client (microsoft-teams-api) takes about a second to
    # import, which no command that only reads the settings should pay.
    from channels.teams.connector import TeamsClient

logger = logging.getLogger(__name__)


class TeamsChannel:
    """Teams through the Bot Connector (Teams SDK ``microsoft-teams-api``) and Bot Framework JWTs."""

    name = "teams"
    title = "Teams"
    posts = True
    edits = True
    target_setting: str | None = "teams_conversation"
    client_modules: tuple[str, ...] = ("channels.teams.connector",)
    """Imported by a worker as it starts (``workers.preload``): the Teams SDK's models take about a
    second, which would make the first post of every worker process late."""

    def __init__(self) -> None:
        self.keys = SigningKeys()
        """The OpenID metadata and keys this process verifies activities with (filled by
        ``TeamsClient.refresh_keys``; shared by all requests, holding nothing of any one)."""

    def endpoints(self) -> list[Endpoint]:
        # Imported here: the endpoint's handler uses this module's parsing.
        from channels.teams.inbound import messages

        return [Endpoint("/teams/messages", ("POST",), messages, what="an activity")]

    async def verify_inbound(self, inbound: Inbound, desk: Desk) -> Verified:
        """The verified activity; fetches the OpenID keys first when they are missing, old or lack
        the token's ``kid`` (at most once per unknown ``kid``)."""
        kid = key_id(bearer_token(inbound.headers))
        now = desk.now()
        if self.keys.should_fetch(kid, now):
            client: TeamsClient = await desk.client()
            await client.refresh_keys(self.keys, kid, now)
        return self.authenticate(inbound.headers, inbound.body, now, desk.settings)

    def missing_settings(self, settings: Settings) -> list[str]:
        password = settings.teams_app_password
        wanted = {
            "TEAMS_APP_ID": settings.teams_app_id,
            "TEAMS_APP_PASSWORD": password is not None and password.get_secret_value().strip(),
            "TEAMS_TENANT_ID": settings.teams_tenant_id,
            "HUMANGATE_TEAMS_CONVERSATION": settings.teams_conversation,
        }
        return [name for name, value in wanted.items() if not value]

    def render(self, hf: HumanFunction, ctx: RenderContext) -> dict[str, Any]:
        return render_card(hf, ctx)

    def parse(self, hf: HumanFunction, payload: Mapping[str, Any]) -> Answer:
        action = card_action(payload)
        if action is None or action.hf_id != hf.id:
            raise InvalidAnswerError({"": "this activity is not a click on this request's card"})
        return answer_of(hf, action, person(payload)[1]).model_copy(update={"person": identity(payload)})

    def identity(self, payload: Mapping[str, Any]) -> Person | None:
        return identity(payload)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings) -> None:
        self.authenticate(headers, body, now, settings)

    def authenticate(
        self, headers: Mapping[str, str], body: bytes, now: float, settings: Settings
    ) -> Verified:
        """``verify``, returning the activity and the token's claims. The keys must have been fetched
        (``TeamsClient.refresh_keys``); an unknown ``kid`` raises ``UnknownKeyError``."""
        if not settings.teams_app_id:
            raise SignatureError("TEAMS_APP_ID is not set, so no Teams activity can be verified")
        return verify_activity(headers, body, self.keys, settings.teams_app_id, now)

    @asynccontextmanager
    async def connect(self, settings: Settings) -> AsyncIterator[TeamsClient]:
        from channels.teams.connector import TeamsClient

        client = TeamsClient(settings)
        try:
            yield client
        finally:
            await client.close()

    async def deliver(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> dict[str, Any]:
        from channels.teams.connector import TooLargeError

        teams: TeamsClient = client
        if hf.delivery_attempts > 1:
            logger.info("posting again after a failure that posted nothing hf=%s channel=teams", hf.id)
        conversation = hf.target or teams.conversation  # a policy's target replaces the configured one
        try:
            activity_id = await teams.post(render_card(hf, ctx), summary_of(hf), conversation)
        except TooLargeError:
            logger.warning("card refused as too large; posting the short card hf=%s channel=teams", hf.id)
            activity_id = await teams.post(oversized_card(hf, ctx), summary_of(hf), conversation)
        return {"conversation": conversation, "activity_id": activity_id}

    async def find_post(self, hf: HumanFunction, client: Any) -> dict[str, Any] | None:
        # A bot cannot read a conversation's history; the first click on such a card adopts it
        # (``channels.teams.inbound``), which then shows the outcome.
        return None

    async def remind(self, hf: HumanFunction, text: str, client: Any) -> None:
        teams: TeamsClient = client
        conversation, activity_id = hf.refs.get("conversation"), hf.refs.get("activity_id")
        if conversation and activity_id:
            await teams.reply(str(conversation), str(activity_id), text)

    async def update(self, hf: HumanFunction, ctx: RenderContext, client: Any) -> None:
        teams: TeamsClient = client
        conversation, activity_id = hf.refs.get("conversation"), hf.refs.get("activity_id")
        if not conversation or not activity_id:
            return
        try:
            await teams.edit(str(conversation), str(activity_id), render_card(hf, ctx), summary_of(hf))
        except DeliveryError as exc:
            if exc.retryable:
                raise
            logger.warning("cannot show the outcome hf=%s channel=teams: %s", hf.id, exc)

    def openings(self, settings: Settings) -> list[Opening]:
        """None: the platform reaches this channel by calling its endpoints."""
        return []

    async def check(self, settings: Settings) -> list[str]:
        async with self.connect(settings) as client:
            problems = []
            try:
                await client.refresh_keys(SigningKeys(), "", 0.0)
            except SignatureError as exc:
                problems.append(f"HUMANGATE_TEAMS_OPENID_URL: {exc}, so no click could be verified")
            try:
                await client.token()
                members = await client.members()
            except DeliveryError as exc:
                return [*problems, str(exc)]
        if members == 0:
            problems.append(
                f"conversation {client.conversation} has no members the bot can see: add the app there"
            )
        return problems
