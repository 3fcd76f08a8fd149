"""A fake Microsoft Teams for tests: the Bot Connector, the Entra token endpoint, and Bot Framework's
OpenID metadata with its JWKS, all on one recording ``FakeServer``.

The gateway's real Teams SDK client talks to it through ``HUMANGATE_TEAMS_SERVICE_URL``,
``HUMANGATE_TEAMS_TOKEN_URL`` and ``HUMANGATE_TEAMS_OPENID_URL`` (``FakeTeams.env``). It answers as
Microsoft does: the token endpoint checks the client credentials, the Bot Connector checks the bot's
token, the conversation, Teams' message size (413 ``MessageSizeTooBig``) and the card
(``tests.fakes.teams_cards``). ``sign`` makes the JWT Bot Framework puts on an activity, RS256 with
this module's test key, whose public half the JWKS lists (endorsed for ``msteams``).
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.responses import JSONResponse, Response

from channels.teams.card import activity_size
from tests.fakes.server import Call, FakeServer
from tests.fakes.teams_cards import card_problems

APP_ID = "00000000-0000-4000-8000-00000000a001"
PASSWORD = "fake-teams-client-secret"
TENANT_ID = "00000000-0000-4000-8000-00000000e001"
CONVERSATION = "19:approvals0123456789@thread.tacv2"
BOT_TOKEN = "fake-bot-connector-token"
ISSUER = "https://api.botframework.com"
KID = "fake-key-1"
MAX_MESSAGE_BYTES = 28 * 1024
"""Teams' message size limit as the fake enforces it (UTF-16 bytes of the activity)."""
WAIT = 30.0


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


SIGNING_KEY = _key()
"""The test-only key of the fake Bot Framework; the JWKS lists its public half as ``KID``."""
OTHER_KEY = _key()
"""A key the JWKS never lists."""


def jwk_of(key: rsa.RSAPrivateKey, kid: str, endorsements: list[str] | None = None) -> dict[str, Any]:
    """The public JWK of ``key`` as Bot Framework publishes its keys."""
    numbers = key.public_key().public_numbers()

    def b64(number: int) -> str:
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return {
        "kty": "RSA",
        "use": "sig",
        "kid": kid,
        "n": b64(numbers.n),
        "e": b64(numbers.e),
        "endorsements": endorsements if endorsements is not None else ["msteams", "emulator"],
    }


@dataclass(frozen=True)
class Person:
    name: str
    aad_id: str
    teams_id: str

    @property
    def by(self) -> str:
        """How humangate names this person in outcomes."""
        return f"{self.name} ({self.aad_id})"


ADA = Person("Ada Lovelace", "00000000-0000-4000-8000-0000000000a1", "29:1ada")
BO = Person("Bo Jensen", "00000000-0000-4000-8000-0000000000b2", "29:1bo")


@dataclass
class FakeTeams:
    """Microsoft's side of a Teams bot, in memory."""

    lose_post_responses: int = 0
    """Posts to create (as Teams would) but answer with a 500, as if the response got lost."""
    activities: dict[str, dict[str, Any]] = field(default_factory=dict)
    replies: list[dict[str, Any]] = field(default_factory=list)
    """Replies to an activity (``POST .../activities/{id}``), each with the ``replyToId`` it answers."""
    """Every activity as it is now (edits replace it)."""
    originals: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every activity as it was first posted."""
    keys: list[dict[str, Any]] = field(default_factory=lambda: [jwk_of(SIGNING_KEY, KID)])
    conversations: set[str] = field(default_factory=lambda: {CONVERSATION})
    """Conversations the bot is in (``CONVERSATION`` and, say, a policy's targets)."""
    server: FakeServer = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1700000000001))

    def __post_init__(self) -> None:
        self.server = FakeServer(self._handle)

    @property
    def service_url(self) -> str:
        return f"{self.server.url}/teams/"

    @property
    def openid_url(self) -> str:
        return f"{self.server.url}/botframework/v1/.well-known/openidconfiguration"

    @property
    def token_url(self) -> str:
        return f"{self.server.url}/{TENANT_ID}/oauth2/v2.0/token"

    def env(self, **extra: str) -> dict[str, str]:
        """The gateway environment that points Teams at this fake."""
        return {
            "TEAMS_APP_ID": APP_ID,
            "TEAMS_APP_PASSWORD": PASSWORD,
            "TEAMS_TENANT_ID": TENANT_ID,
            "HUMANGATE_TEAMS_CONVERSATION": CONVERSATION,
            "HUMANGATE_TEAMS_SERVICE_URL": self.service_url,
            "HUMANGATE_TEAMS_OPENID_URL": self.openid_url,
            "HUMANGATE_TEAMS_TOKEN_URL": self.token_url,
        } | extra

    def sign(
        self,
        activity: dict[str, Any],
        *,
        key: rsa.RSAPrivateKey = SIGNING_KEY,
        kid: str = KID,
        algorithm: str = "RS256",
        **claims: Any,
    ) -> str:
        """The JWT Bot Framework sends with ``activity`` (``claims`` override or, as None, drop claims)."""
        now = int(time.time())
        body: dict[str, Any] = {
            "serviceurl": activity.get("serviceUrl"),
            "nbf": now - 5,
            "exp": now + 3600,
            "iss": ISSUER,
            "aud": APP_ID,
        } | claims
        body = {k: v for k, v in body.items() if v is not None}
        signer: Any = key if algorithm.startswith("RS") else PASSWORD * 3  # HMAC: any long shared secret
        return jwt.encode(body, signer, algorithm=algorithm, headers={"kid": kid})

    def activities_path(self, activity_id: str = "", conversation: str = CONVERSATION) -> str:
        base = f"/teams/v3/conversations/{conversation}/activities"
        return f"{base}/{activity_id}" if activity_id else base

    def post_calls(self) -> list[Call]:
        return self.server.calls_to(self.activities_path(), "POST")

    def key_fetches(self) -> int:
        return len(self.server.calls_to("/botframework/v1/.well-known/keys", "GET"))

    def stored(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(a) for a in self.activities.values()]

    async def posted(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` activities as they were posted (before any edit), once they are."""

        def found(_: list[Call]) -> list[dict[str, Any]] | None:
            with self._lock:
                posted = [dict(a) for a in self.originals.values()]
            return posted[:count] if len(posted) >= count else None

        return await self.server.wait_for(found)

    async def edited(self, activity_id: str, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The card of the first edit of ``activity_id`` that ``predicate`` accepts."""

        def found(_: list[Call]) -> dict[str, Any] | None:
            cards = [
                card_of(c.json()) for c in self.server.calls_to(self.activities_path(activity_id), "PUT")
            ]
            return next((card for card in cards if predicate(card)), None)

        return await self.server.wait_for(found)

    def _handle(self, call: Call) -> Response:
        path = call.path
        if path == "/botframework/v1/.well-known/openidconfiguration":
            return JSONResponse(
                {
                    "issuer": ISSUER,
                    "authorization_endpoint": "https://invalid.botframework.com",
                    "jwks_uri": f"{self.server.url}/botframework/v1/.well-known/keys",
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                }
            )
        if path == "/botframework/v1/.well-known/keys":
            with self._lock:
                return JSONResponse({"keys": list(self.keys)})
        if path == f"/{TENANT_ID}/oauth2/v2.0/token" and call.method == "POST":
            return _token(call.form())
        if not path.startswith("/teams/v3/conversations/"):
            return _error(404, "NotFound", "no such route")
        if call.headers.get("authorization") != f"Bearer {BOT_TOKEN}":
            return _error(401, "Unauthorized", "Authorization has been denied for this request.")
        parts = path.removeprefix("/teams/v3/conversations/").split("/")
        if parts[0] not in self.conversations:
            return _error(404, "ConversationNotFound", "Conversation not found.")
        if parts[1:] == ["members"] and call.method == "GET":
            members = [{"id": p.teams_id, "name": p.name, "aadObjectId": p.aad_id} for p in (ADA, BO)]
            return JSONResponse(members)
        if parts[1:] == ["activities"] and call.method == "POST":
            body = call.json()
            if body.get("replyToId"):  # how the Teams SDK replies (the REST reference uses the path below)
                return self._reply(str(body["replyToId"]), body)
            return self._create(body)
        if len(parts) == 3 and parts[1] == "activities" and call.method == "POST":
            return self._reply(parts[2], call.json())
        if len(parts) == 3 and parts[1] == "activities" and call.method == "PUT":
            return self._update(parts[2], call.json())
        return _error(404, "NotFound", "no such route")

    def _create(self, activity: dict[str, Any]) -> Response:
        problem = _problem(activity)
        if problem is not None:
            return problem
        with self._lock:
            activity_id = str(next(self._ids))
            self.activities[activity_id] = {"id": activity_id, **activity}
            self.originals[activity_id] = {"id": activity_id, **activity}
            if self.lose_post_responses:
                self.lose_post_responses -= 1
                return _error(500, "InternalServerError", "An error has occurred.")
        return JSONResponse({"id": activity_id}, status_code=201)

    def _reply(self, activity_id: str, activity: dict[str, Any]) -> Response:
        with self._lock:
            if activity_id not in self.activities:
                return _error(404, "ActivityNotFoundInConversation", "Activity not found.")
            reply_id = str(next(self._ids))
            self.replies.append({"id": reply_id, **activity, "replyToId": activity_id})
        return JSONResponse({"id": reply_id}, status_code=201)

    async def replied(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` replies to activities, once there are."""

        def found(_: list[Call]) -> list[dict[str, Any]] | None:
            with self._lock:
                return [dict(r) for r in self.replies[:count]] if len(self.replies) >= count else None

        return await self.server.wait_for(found)

    def _update(self, activity_id: str, activity: dict[str, Any]) -> Response:
        problem = _problem(activity)
        if problem is not None:
            return problem
        with self._lock:
            if activity_id not in self.activities:
                return _error(404, "ActivityNotFoundInConversation", "Activity not found.")
            self.activities[activity_id] = {"id": activity_id, **activity}
        return JSONResponse({"id": activity_id})


def card_of(activity: dict[str, Any]) -> dict[str, Any]:
    """The Adaptive Card an activity carries."""
    attachment = activity["attachments"][0]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card: dict[str, Any] = attachment["content"]
    return card


def _problem(activity: dict[str, Any]) -> Response | None:
    if activity.get("type") != "message" or len(activity.get("attachments") or []) != 1:
        return _error(400, "BadArgument", "a message with one attachment is expected")
    card = card_of(activity)
    if activity_size(card, activity.get("summary") or "") > MAX_MESSAGE_BYTES:
        return _error(413, "MessageSizeTooBig", "Message size too big.")
    problems = card_problems(card)
    if problems:
        return _error(400, "BadArgument", "; ".join(problems))
    return None


def _token(form: dict[str, str]) -> Response:
    if (
        form.get("grant_type") != "client_credentials"
        or form.get("scope") != "https://api.botframework.com/.default"
    ):
        return JSONResponse(
            {"error": "invalid_request", "error_description": "AADSTS900144"}, status_code=400
        )
    if form.get("client_id") != APP_ID:
        return JSONResponse(
            {"error": "unauthorized_client", "error_description": "AADSTS700016"}, status_code=400
        )
    if form.get("client_secret") != PASSWORD:
        return JSONResponse(
            {"error": "invalid_client", "error_description": "AADSTS7000215"}, status_code=401
        )
    body = {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": BOT_TOKEN}
    return JSONResponse(body)


def _error(status: int, code: str, message: str) -> Response:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def dumps(activity: dict[str, Any]) -> bytes:
    """An activity's body as Bot Framework sends it."""
    return json.dumps(activity).encode()
