"""The Bot Connector, the token endpoint and the OpenID keys: every call humangate makes for Teams.

Activities are posted and edited through the Teams SDK's ``ConversationClient``
(``microsoft-teams-api``) at ``HUMANGATE_TEAMS_SERVICE_URL``. Its requests carry the bot's own
token, which ``BotToken`` gets from ``HUMANGATE_TEAMS_TOKEN_URL`` with the client-credentials grant
and keeps until shortly before it expires. ``Backoff``, a middleware of the SDK's HTTP client,
retries what Microsoft asks bots to retry (429, 412, 502, 504), waiting ``Retry-After`` or an
exponential backoff with jitter. Every call has a timeout. Failures become ``DeliveryError``:
retryable when nothing can have been posted (the network never connected, the token endpoint or
Teams throttled), not retryable when a person must fix something or when Teams may have posted
the card without saying so (a timeout, a 500): posting again could show two cards.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from microsoft_teams.api.activities.message.message import MessageActivityInput
from microsoft_teams.api.clients.conversation import ConversationClient
from microsoft_teams.api.models.attachment.attachment import Attachment
from microsoft_teams.common.http import Client, ClientOptions
from microsoft_teams.common.http.client import MiddlewareContext, MiddlewareNext

from channels.teams.auth import SigningKeys
from schemas.errors import DeliveryError, SignatureError
from schemas.settings import Settings

logger = logging.getLogger(__name__)

CALL_TIMEOUT = 10.0
"""Seconds one HTTP request to the Bot Connector or the token endpoint may take."""
KEY_FETCH_TIMEOUT = 2.0
"""Seconds fetching the OpenID metadata or its JWKS may take (an action waits on it)."""
BOT_SCOPE = "https://api.botframework.com/.default"
"""The scope of the bot's token for the Bot Connector."""
TOKEN_MARGIN = 300.0
"""Seconds before its expiry a token is replaced."""
RETRY_STATUSES = frozenset({429, 412, 502, 504})
"""Statuses Microsoft asks bots to retry: throttled, and transient gateway conditions."""
RETRIES = 3
"""Retries of one Bot Connector request after such a status."""
BACKOFF_BASE = 0.5
"""Seconds of the first backoff; each retry doubles it (full jitter) unless Retry-After says more."""
MAX_RETRY_WAIT = 20.0
"""Longest wait before a retry; a longer Retry-After fails the call as retryable instead."""
CARD_TYPE = "application/vnd.microsoft.card.adaptive"

_TOKEN_FIXES = {
    "invalid_client": "TEAMS_APP_PASSWORD was refused: create a new client secret for the app "
    "registration (Certificates & secrets) and set it",
    "unauthorized_client": "TEAMS_APP_ID is not an app of tenant TEAMS_TENANT_ID: copy both from the "
    "Azure Bot's Configuration page",
    "invalid_request": "the token request was refused: check TEAMS_TENANT_ID and TEAMS_APP_ID",
}


class TooLargeError(DeliveryError):
    """Teams refused the activity as too large (413): nothing was posted."""


_tokens: dict[tuple[str, str, int], tuple[str, float]] = {}
"""Tokens of this process by (token URL, app id, hash of the password), with their expiry: each
delivery job opens its own client, and the token endpoint need not be asked for each card."""


@dataclass
class BotToken:
    """The bot's own access token for the Bot Connector, fetched when missing or nearly expired."""

    http: httpx.AsyncClient
    url: str
    app_id: str
    password: str
    _lock: asyncio.Lock | None = None

    async def __call__(self) -> str:
        if self._lock is None:
            self._lock = asyncio.Lock()
        key = (self.url, self.app_id, hash(self.password))
        async with self._lock:
            value, expires = _tokens.get(key, ("", 0.0))
            if not value or time.time() > expires - TOKEN_MARGIN:
                value, lifetime = await self._fetch()
                _tokens[key] = (value, time.time() + lifetime)
            return value

    async def _fetch(self) -> tuple[str, float]:
        form = {
            "grant_type": "client_credentials",
            "client_id": self.app_id,
            "client_secret": self.password,
            "scope": BOT_SCOPE,
        }
        try:
            response = await self.http.post(self.url, data=form, timeout=CALL_TIMEOUT)
        except httpx.HTTPError as exc:
            raise DeliveryError(
                f"cannot reach the token endpoint ({type(exc).__name__})", retryable=True
            ) from exc
        body = _json(response)
        if response.status_code == 429 or response.status_code >= 500:
            raise DeliveryError(f"the token endpoint answered {response.status_code}", retryable=True)
        token, lifetime = body.get("access_token"), body.get("expires_in")
        if response.status_code != 200 or not isinstance(token, str) or not token:
            error = str(body.get("error") or f"HTTP {response.status_code}")
            fix = _TOKEN_FIXES.get(error, "check TEAMS_APP_ID, TEAMS_APP_PASSWORD and TEAMS_TENANT_ID")
            raise DeliveryError(f"Microsoft refused the bot's token ({error}): {fix}", retryable=False)
        return token, float(lifetime) if isinstance(lifetime, int | float) else 3600.0


class Backoff:
    """SDK middleware: retry a request Teams throttled or could not pass on (``RETRY_STATUSES``)."""

    async def send(self, context: MiddlewareContext, next: MiddlewareNext) -> httpx.Response:
        for attempt in range(RETRIES + 1):
            try:
                return await next()
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                if status not in RETRY_STATUSES or attempt == RETRIES:
                    raise
                wait = retry_wait(exc.response.headers.get("retry-after"), attempt)
                if wait > MAX_RETRY_WAIT:
                    raise
                logger.info("Teams answered %s; retrying in %.1f s channel=teams", status, wait)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover


def retry_wait(retry_after: str | None, attempt: int) -> float:
    """Seconds to wait before retry ``attempt + 1``: ``Retry-After`` if given, else full jitter."""
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    return random.uniform(0, BACKOFF_BASE * 2**attempt)


class TeamsClient:
    """What ``TeamsChannel.connect`` yields: the Bot Connector for one bot, and its key fetcher."""

    def __init__(self, settings: Settings) -> None:
        password = settings.teams_app_password.get_secret_value() if settings.teams_app_password else ""
        self.settings = settings
        self.conversation = settings.teams_conversation or ""
        self.service_url = settings.teams_service_url.rstrip("/")
        self.http = httpx.AsyncClient(timeout=CALL_TIMEOUT)
        self.token = BotToken(self.http, settings.teams_token_endpoint, settings.teams_app_id or "", password)
        self._sdk_http = Client(ClientOptions(timeout=CALL_TIMEOUT, token=self.token))
        self._sdk_http.use(Backoff())
        self.api = ConversationClient(self.service_url, self._sdk_http)
        self._keys_lock = asyncio.Lock()

    async def close(self) -> None:
        await self._sdk_http.http.aclose()
        await self.http.aclose()

    async def post(self, card: Mapping[str, Any], summary: str, conversation: str | None = None) -> str:
        """Post ``card`` to ``conversation`` (default ``HUMANGATE_TEAMS_CONVERSATION``); returns the
        new activity's id."""
        activity = _message(card, summary)
        sent = await self._call(
            "post the card",
            self.api.create_activity(conversation or self.conversation, activity),
            post=True,
            conversation=conversation,
        )
        return str(sent.id)

    async def reply(self, conversation: str, activity_id: str, text: str) -> None:
        """Reply ``text`` to an earlier activity (in its thread, in a channel)."""
        activity = MessageActivityInput(text=text)
        await self._call(
            "reply to the card", self.api.reply_to_activity(conversation, activity_id, activity), post=True
        )

    async def edit(self, conversation: str, activity_id: str, card: Mapping[str, Any], summary: str) -> None:
        """Replace the card of an earlier activity (for everyone in the conversation)."""
        activity = _message(card, summary)
        await self._call("update the card", self.api.update_activity(conversation, activity_id, activity))

    async def members(self) -> int:
        """How many members the conversation has (the bot must be one of them to post)."""
        members = await self._call("read the conversation", self.api.get_members(self.conversation))
        return len(members) if isinstance(members, list) else 0

    async def refresh_keys(self, keys: SigningKeys, kid: str, now: float) -> None:
        """Fetch the OpenID metadata and its JWKS into ``keys`` unless another request just did."""
        async with self._keys_lock:
            if not keys.should_fetch(kid, now):
                return
            url = self.settings.teams_openid_url
            try:
                metadata = await self._get_json(url)
                jwks_uri = metadata.get("jwks_uri")
                if not isinstance(jwks_uri, str) or not jwks_uri:
                    raise SignatureError("the OpenID metadata names no jwks_uri")
                jwks = await self._get_json(jwks_uri)
            except (httpx.HTTPError, ValueError) as exc:
                raise SignatureError(f"cannot fetch the signing keys ({type(exc).__name__})") from None
            keys.replace(metadata, jwks, kid, now)
            logger.info("fetched %d signing keys channel=teams", len(keys.keys))

    async def _get_json(self, url: str) -> dict[str, Any]:
        response = await self.http.get(url, timeout=KEY_FETCH_TIMEOUT)
        response.raise_for_status()
        data = response.json()
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data

    async def _call(
        self, doing: str, request: Any, *, post: bool = False, conversation: str | None = None
    ) -> Any:
        try:
            return await request
        except DeliveryError:
            raise
        except httpx.HTTPStatusError as exc:
            raise failure(exc.response, doing, conversation or self.conversation, post=post) from exc
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise DeliveryError(
                f"cannot reach Teams at {self.service_url} to {doing} ({type(exc).__name__})",
                retryable=True,
            ) from exc
        except httpx.HTTPError as exc:
            # The request may have reached Teams: posting again could post a second card.
            raise DeliveryError(
                f"Teams did not answer when asked to {doing} ({type(exc).__name__})",
                retryable=not post,
            ) from exc


def failure(response: httpx.Response, doing: str, conversation: str, *, post: bool) -> DeliveryError:
    """A Bot Connector refusal in plain words; retryable only when nothing can have been posted."""
    status = response.status_code
    error = _json(response).get("error")
    code = str(error.get("code") or "") if isinstance(error, Mapping) else ""
    detail = f"{status}{f' {code}' if code else ''}"
    if status == 413:
        return TooLargeError(f"Teams refused to {doing}: the card is too large ({detail})", retryable=False)
    if status in RETRY_STATUSES:
        return DeliveryError(f"Teams kept answering {detail} when asked to {doing}", retryable=True)
    if status == 401:
        advice = "Teams refused the bot's token: check TEAMS_APP_ID, TEAMS_APP_PASSWORD and TEAMS_TENANT_ID"
    elif status == 403:
        advice = (
            f"the bot may not post in conversation {conversation}: add the app to that team or chat "
            "(deploy/teams) and check HUMANGATE_TEAMS_CONVERSATION"
        )
    elif status == 404:
        advice = (
            f"conversation {conversation} or the message was not found: check HUMANGATE_TEAMS_CONVERSATION"
        )
    elif status >= 500:
        return DeliveryError(f"Teams answered {detail} when asked to {doing}", retryable=not post)
    else:
        advice = f"Teams refused it ({detail})"
    return DeliveryError(f"cannot {doing}: {advice}", retryable=False)


def _message(card: Mapping[str, Any], summary: str) -> MessageActivityInput:
    attachment = Attachment(content_type=CARD_TYPE, content=dict(card))
    return MessageActivityInput(summary=summary, attachments=[attachment])


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
