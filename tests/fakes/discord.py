"""A fake Discord for tests: the REST routes humangate calls, answered like Discord answers them,
and its Gateway (``tests.fakes.discord_gateway``, named by ``GET /gateway/bot``).

discord.py's real HTTP client talks to it through ``HUMANGATE_DISCORD_API_URL`` (``FakeDiscord.api_url``);
every request is recorded by ``tests.fakes.server.FakeServer``. An interaction sent over the Gateway
is answered at ``POST /interactions/{id}/{token}/callback``: once per interaction dispatched (Discord
answers 404 Unknown interaction to another id and 400 to a second answer). The fake also refuses what Discord
refuses (too many rows or buttons, over-long labels and custom ids), so a rendering that breaks a limit
fails the end-to-end tests too. Interactions to send to the gateway are built and signed in
``tests.fakes.discord_interactions`` with this module's test key.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from nacl.signing import SigningKey
from starlette.responses import JSONResponse, Response

from tests.fakes.discord_gateway import FakeGateway
from tests.fakes.server import Call, FakeServer

TOKEN = "fake-discord-bot-token"
APPLICATION_ID = "1100000000000000001"
GUILD_ID = "1200000000000000001"
CHANNEL_ID = "1300000000000000001"
HIDDEN_CHANNEL_ID = "1300000000000000002"
"""A channel the bot cannot see: Discord answers 403 Missing Access."""
CATEGORY_ID = "1300000000000000003"
REVIEWERS_ROLE = "1400000000000000001"
SIGNING_KEY = SigningKey(bytes(range(32)))
"""A fixed test-only key; its public half is the gateway's DISCORD_PUBLIC_KEY."""
PUBLIC_KEY = SIGNING_KEY.verify_key.encode().hex()
BOT_USER = {
    "id": APPLICATION_ID,
    "username": "humangate",
    "global_name": None,
    "avatar": None,
    "bot": True,
    "discriminator": "0",
    "public_flags": 0,
    "flags": 0,
    "banner": None,
    "accent_color": None,
    "mfa_enabled": True,
    "locale": "en-US",
    "verified": True,
}
"""The bot's user, as ``GET /users/@me`` and READY give it."""
WAIT = 30.0


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    roles: tuple[str, ...] = ()

    @property
    def by(self) -> str:
        """How humangate names this person in outcomes."""
        return f"{self.name} ({self.id})"


ADA = Person("1500000000000000001", "Ada")
BO = Person("1500000000000000002", "Bo")
CY = Person("1500000000000000003", "Cy", roles=(REVIEWERS_ROLE,))


@dataclass
class FakeDiscord:
    """Discord's REST API in memory: channels, messages (with nonces), interaction webhooks."""

    token: str = TOKEN
    lose_post_responses: int = 0
    """Posts to create (as Discord would) but answer with a 500, as if the response got lost."""
    fail_post_responses: int = 0
    """Posts to create but answer with a 503 (discord.py does not retry it; the job is retried)."""
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    other_channels: set[str] = field(default_factory=set)
    """Text channels the bot may post in besides ``CHANNEL_ID`` (a policy's targets)."""
    interactions_endpoint_url: str | None = None
    """The application's Interactions Endpoint URL (Discord then sends no interaction over the Gateway)."""
    server: FakeServer = field(init=False)
    gateway: FakeGateway = field(init=False)
    answered: dict[str, float] = field(default_factory=dict)
    """Interaction id -> seconds from its dispatch over the Gateway to its callback."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1600000000000000001))
    _dispatched: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.server = FakeServer(self._handle)
        self.gateway = FakeGateway(self.token, BOT_USER, APPLICATION_ID)

    @contextmanager
    def running(self) -> Iterator[FakeDiscord]:
        """The REST API and the Gateway, both listening on loopback."""
        with self.server.running():
            self.gateway.start()
            try:
                yield self
            finally:
                self.gateway.stop()

    @property
    def api_url(self) -> str:
        return f"{self.server.url}/api/v10"

    def env(self, *, inbound: str = "http", **extra: str) -> dict[str, str]:
        """The gateway environment that points Discord at this fake; with ``inbound="gateway"``,
        interactions come over the Gateway and no public key is set."""
        env = {
            "DISCORD_BOT_TOKEN": self.token,
            "DISCORD_APPLICATION_ID": APPLICATION_ID,
            "DISCORD_PUBLIC_KEY": PUBLIC_KEY,
            "HUMANGATE_DISCORD_CHANNEL_ID": CHANNEL_ID,
            "HUMANGATE_DISCORD_API_URL": self.api_url,
            "HUMANGATE_DISCORD_INBOUND": inbound,
        }
        if inbound == "gateway":
            del env["DISCORD_PUBLIC_KEY"]
        return env | extra

    def callback_path(self, interaction: Mapping[str, Any]) -> str:
        return f"/api/v10/interactions/{interaction['id']}/{interaction['token']}/callback"

    async def dispatch(self, interaction: dict[str, Any]) -> bool:
        """Send ``interaction`` over the Gateway (see ``FakeGateway.dispatch``)."""
        with self._lock:
            self._dispatched[str(interaction["id"])] = time.monotonic()
        return await self.gateway.dispatch(interaction)

    async def interact(self, interaction: dict[str, Any]) -> dict[str, Any]:
        """Send ``interaction`` over the Gateway once a session is connected, and return the
        interaction response humangate posted to its callback."""
        await self.gateway.session_up()
        assert await self.dispatch(interaction), "no Gateway session took the interaction"
        calls = await self.server.wait_for_call(self.callback_path(interaction), method="POST")
        body: dict[str, Any] = calls[0].json()
        return body

    def post_calls(self) -> list[Call]:
        return self.server.calls_to(f"/api/v10/channels/{CHANNEL_ID}/messages", "POST")

    def edit_calls(self, message_id: str) -> list[Call]:
        return self.server.calls_to(f"/api/v10/channels/{CHANNEL_ID}/messages/{message_id}", "PATCH")

    def stored(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(m) for m in self.messages.values()]

    async def posted(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` messages created, once they are."""
        return await self.server.wait_for(
            lambda _: self.stored()[:count] if len(self.stored()) >= count else None
        )

    def replies_to(self) -> list[dict[str, Any]]:
        """Every message posted as a reply (``message_reference``) so far."""
        return [m for m in self.stored() if m.get("message_reference")]

    async def replied(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` replies, once there are."""
        return await self.server.wait_for(
            lambda _: self.replies_to()[:count] if len(self.replies_to()) >= count else None
        )

    async def edited(self, message_id: str, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The body of the first edit of ``message_id`` that ``predicate`` accepts."""

        def found(_: list[Call]) -> dict[str, Any] | None:
            bodies = [call.json() for call in self.edit_calls(message_id)]
            return next((body for body in bodies if predicate(body)), None)

        return await self.server.wait_for(found)

    def rate_limit(self, method: str, path: str, retry_after: float) -> None:
        """Answer the next ``method path`` with a 429 as Discord does (header, body, via its proxy)."""
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
        headers = {"Retry-After": str(retry_after), "X-RateLimit-Scope": "user", "Via": "1.1 google"}
        self.server.script(method, path, 429, body, headers=headers)

    def _handle(self, call: Call) -> Response:
        path = call.path.removeprefix("/api/v10")
        parts = path.strip("/").split("/")
        if parts[0] == "webhooks":
            return JSONResponse({"id": str(next(self._ids)), "channel_id": CHANNEL_ID, "flags": 64})
        if parts[0] == "interactions" and parts[3:] == ["callback"] and call.method == "POST":
            return self._callback(parts[1])
        if call.headers.get("authorization") != f"Bot {self.token}":
            return _error(401, 0, "401: Unauthorized")
        if path == "/users/@me" and call.method == "GET":
            return JSONResponse(BOT_USER)
        if path == "/oauth2/applications/@me" and call.method == "GET":
            return JSONResponse(self._application())
        if path == "/gateway/bot" and call.method == "GET":
            limit = {"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1}
            return JSONResponse({"url": self.gateway.url, "shards": 1, "session_start_limit": limit})
        if parts[0] == "channels" and len(parts) >= 2:
            problem = None if parts[1] in self.other_channels else _channel_problem(parts[1])
            if problem is not None:
                return problem
            if len(parts) == 2 and call.method == "GET":
                kind = 4 if parts[1] == CATEGORY_ID else 0
                return JSONResponse({"id": parts[1], "type": kind, "name": "approvals", "guild_id": GUILD_ID})
            if parts[2:] == ["messages"] and call.method == "POST":
                return self._create(parts[1], call.json())
            if parts[2:] == ["messages"] and call.method == "GET":
                with self._lock:
                    found = [m for m in self.messages.values() if m["channel_id"] == parts[1]]
                return JSONResponse(list(reversed(found))[: int(call.query.get("limit", 50))])
            if len(parts) == 4 and parts[2] == "messages" and call.method == "PATCH":
                return self._edit(parts[3], call.json())
        return _error(404, 0, "404: Not Found")

    def _callback(self, interaction_id: str) -> Response:
        with self._lock:
            dispatched = self._dispatched.get(interaction_id)
            if dispatched is None:
                return _error(404, 10062, "Unknown interaction")
            if interaction_id in self.answered:
                return _error(400, 40060, "Interaction has already been acknowledged.")
            self.answered[interaction_id] = time.monotonic() - dispatched
        return Response(status_code=204)

    def _application(self) -> dict[str, Any]:
        return {
            "id": APPLICATION_ID,
            "name": "humangate",
            "icon": None,
            "description": "",
            "bot_public": False,
            "bot_require_code_grant": False,
            "owner": {"id": "1500000000000000009", "username": "owner", "discriminator": "0", "avatar": None},
            "verify_key": PUBLIC_KEY,
            "flags": 0,
            "interactions_endpoint_url": self.interactions_endpoint_url,
        }

    def _create(self, channel_id: str, body: dict[str, Any]) -> Response:
        invalid = form_problems(body)
        if invalid:
            return _error(400, 50035, "Invalid Form Body: " + "; ".join(invalid))
        reference = body.get("message_reference")
        if reference is not None:
            with self._lock:
                known = reference.get("message_id") in self.messages
            if not known and reference.get("fail_if_not_exists", True):
                return _error(400, 50035, "Invalid Form Body: message_reference: Unknown message")
        with self._lock:
            nonce = body.get("nonce")
            same = [m for m in self.messages.values() if nonce is not None and m.get("nonce") == nonce]
            if same and body.get("enforce_nonce"):
                return JSONResponse(same[0])
            message = {
                "id": str(next(self._ids)),
                "channel_id": channel_id,
                "author": BOT_USER,
                "content": body.get("content", ""),
                "embeds": body.get("embeds", []),
                "components": body.get("components", []),
                "nonce": nonce,
                "message_reference": reference,
                "flags": 0,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            }
            self.messages[message["id"]] = message
            if self.lose_post_responses:
                self.lose_post_responses -= 1
                return _error(500, 0, "500: Internal Server Error")
            if self.fail_post_responses:
                self.fail_post_responses -= 1
                return _error(503, 0, "503: Service Unavailable")
        return JSONResponse(message)

    def _edit(self, message_id: str, body: dict[str, Any]) -> Response:
        invalid = form_problems(body)
        if invalid:
            return _error(400, 50035, "Invalid Form Body: " + "; ".join(invalid))
        with self._lock:
            if message_id not in self.messages:
                return _error(404, 10008, "Unknown Message")
            message = self.messages[message_id]
            message.update({k: body[k] for k in ("content", "embeds", "components") if k in body})
            return JSONResponse(dict(message))


def _error(status: int, code: int, message: str) -> Response:
    return JSONResponse({"message": message, "code": code}, status_code=status)


def _channel_problem(channel_id: str) -> Response | None:
    if channel_id == HIDDEN_CHANNEL_ID:
        return _error(403, 50001, "Missing Access")
    if channel_id not in (CHANNEL_ID, CATEGORY_ID):
        return _error(404, 10003, "Unknown Channel")
    return None


def form_problems(body: Mapping[str, Any]) -> list[str]:
    """What Discord would refuse in a message body (a subset of its limits)."""
    problems = []
    rows = body.get("components") or []
    if len(rows) > 5:
        problems.append("components: at most 5 action rows")
    for row in rows:
        items = row.get("components") or []
        if len(items) > 5 or (len(items) > 1 and any(item["type"] != 2 for item in items)):
            problems.append("a row holds up to 5 buttons or one select")
        for item in items:
            if len(item.get("custom_id", "")) > 100 or len(item.get("label") or "") > 80:
                problems.append("custom_id at most 100, label at most 80 characters")
            if len(item.get("options") or []) > 25:
                problems.append("a select holds at most 25 options")
    if len(body.get("content") or "") > 2000:
        problems.append("content: at most 2000 characters")
    for embed in body.get("embeds") or []:
        size = len(json.dumps(embed, ensure_ascii=False))
        texts = [embed.get("title"), embed.get("description"), (embed.get("footer") or {}).get("text")]
        texts += [text for field in embed.get("fields") or [] for text in (field["name"], field["value"])]
        if len(embed.get("description") or "") > 4096 or len(embed.get("fields") or []) > 25 or size > 8000:
            problems.append("embed over its limits")
        if sum(len(text or "") for text in texts) > 6000:
            problems.append("embed: at most 6000 characters in all")
    return problems
