"""A fake Slack for tests: the Web API methods humangate calls, answered like Slack answers them, and
callbacks (``block_actions``, ``view_submission``) built and signed exactly as Slack does, or sent
over Socket Mode (``apps.connections.open`` hands out a URL of ``tests.fakes.slack_sockets``).

The real slack-sdk talks to it through ``HUMANGATE_SLACK_API_URL`` (``FakeSlack.api_url``); every
request is recorded by ``tests.fakes.server.FakeServer``. ``response_url`` replies land on
``/hooks/...`` of the same server.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import SecretStr
from starlette.responses import JSONResponse, PlainTextResponse, Response

from schemas.settings import Settings
from tests.fakes.server import Call, FakeServer
from tests.fakes.slack_sockets import SocketModeServer

TOKEN = "xoxb-fake-bot-token"
APP_TOKEN = "xapp-1-A1-fake-app-token"
"""The app-level token Socket Mode connections are opened with."""
SIGNING_SECRET = "fake-signing-secret-0123456789"
CHANNEL = "C123"
MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "slack-app-manifest.yaml"
SOCKET_MODE_MANIFEST = MANIFEST.with_name("slack-app-manifest-socket-mode.yaml")
SCOPES = ",".join(yaml.safe_load(MANIFEST.read_text())["oauth_config"]["scopes"]["bot"])
"""The token's scopes: exactly those the app manifest asks for."""
USERS = {"U1": "Ada Lovelace", "U2": "Bo Diddley", "U3": "Mallory Evil"}
"""user id -> real name, as ``users.info`` answers."""
GROUPS = {"S0ONCALL": ["U2"]}
"""user group id -> its members' ids, as ``usergroups.users.list`` answers."""
WAIT = 30.0


@dataclass
class FakeSlack:
    """Slack's Web API in memory: channels, messages with metadata, users, modals opened."""

    token: str = TOKEN
    scopes: str = SCOPES
    channels: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            CHANNEL: {"name": "approvals", "is_member": True, "is_private": False},
            "COUT": {"name": "elsewhere", "is_member": False, "is_private": False},
        }
    )
    lose_post_responses: int = 0
    """Posts to record (as Slack would) but answer with a 500, as if the response got lost."""
    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    threaded: list[dict[str, Any]] = field(default_factory=list)
    """Replies posted in a message's thread (``thread_ts``), with their ``channel``; not in ``messages``."""
    groups: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in GROUPS.items()})
    """User groups and their members; a test may change them while the gateway runs."""
    server: FakeServer = field(init=False)
    sockets: SocketModeServer = field(default_factory=SocketModeServer)
    """Where Socket Mode clients connect (``apps.connections.open``)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.server = FakeServer(self._handle)

    @contextmanager
    def running(self) -> Iterator[FakeSlack]:
        self.sockets.start()
        try:
            with self.server.running():
                yield self
        finally:
            self.sockets.stop()

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def api_url(self) -> str:
        return f"{self.server.url}/api/"

    def env(self, mode: str = "http", **extra: str) -> dict[str, str]:
        """The gateway environment that points Slack at this fake: interactions as signed callbacks
        (``mode="http"``) or over Socket Mode (``"socket"``: an app token and no signing secret)."""
        inbound = (
            {"SLACK_APP_TOKEN": APP_TOKEN} if mode == "socket" else {"SLACK_SIGNING_SECRET": SIGNING_SECRET}
        )
        return (
            {
                "SLACK_BOT_TOKEN": self.token,
                "HUMANGATE_SLACK_CHANNEL": CHANNEL,
                "HUMANGATE_SLACK_API_URL": self.api_url,
            }
            | inbound
            | extra
        )

    def settings(self, base: Settings) -> Settings:
        """``base`` with Slack pointed at this fake, for code run in the test's own process (what
        ``env`` is for a gateway process)."""
        return base.model_copy(
            update={
                "slack_bot_token": SecretStr(self.token),
                "slack_signing_secret": SecretStr(SIGNING_SECRET),
                "slack_channel": CHANNEL,
                "slack_api_url": self.api_url,
            }
        )

    def post_calls(self) -> list[Call]:
        """Every ``chat.postMessage`` request received, answered or not."""
        return self.server.calls_to("/api/chat.postMessage")

    def stored(self, channel: str = CHANNEL) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self.messages.get(channel, []))

    async def posted(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` messages stored, once they are."""
        return await self.server.wait_for(
            lambda _: self.stored()[:count] if len(self.stored()) >= count else None
        )

    async def updated(self, predicate: Any = None) -> dict[str, Any]:
        """The arguments of the first ``chat.update`` that ``predicate`` accepts."""

        def found(calls: list[Call]) -> dict[str, Any] | None:
            for call in calls:
                if call.path == "/api/chat.update" and (predicate is None or predicate(call.json())):
                    return dict(call.json())
            return None

        return await self.server.wait_for(found)

    def thread_replies(self) -> list[dict[str, Any]]:
        """Every reply posted in a thread so far (``thread_ts`` names its message)."""
        with self._lock:
            return copy.deepcopy(self.threaded)

    async def replied_in_threads(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` thread replies, once there are."""
        return await self.server.wait_for(
            lambda _: self.thread_replies()[:count] if len(self.thread_replies()) >= count else None
        )

    async def opened_view(self, count: int = 1) -> dict[str, Any]:
        """The view of the ``count``-th ``views.open``."""
        calls = await self.server.wait_for_call("/api/views.open", count)
        view: dict[str, Any] = calls[-1].json()["view"]
        return view

    async def replies(self, count: int = 1) -> list[dict[str, Any]]:
        """The first ``count`` ``response_url`` replies."""

        def found(calls: list[Call]) -> list[dict[str, Any]] | None:
            hooks = [c.json() for c in calls if c.path.startswith("/hooks/")]
            return hooks[:count] if len(hooks) >= count else None

        return await self.server.wait_for(found)

    def _handle(self, call: Call) -> Response:
        if call.path.startswith("/hooks/"):
            return PlainTextResponse("ok")
        if not call.path.startswith("/api/"):
            return PlainTextResponse("not found", status_code=404)
        if call.path == "/api/apps.connections.open":
            if call.headers.get("authorization") != f"Bearer {APP_TOKEN}":
                return _error("invalid_auth")
            return _ok(url=self.sockets.url())
        if call.headers.get("authorization") != f"Bearer {self.token}":
            return _error("invalid_auth")
        method = call.path.removeprefix("/api/")
        handler = _METHODS.get(method)
        if handler is None:
            return _error("unknown_method")
        return handler(self, call.args())

    def _conversation(self, channel: str) -> tuple[str, dict[str, Any]] | None:
        if channel in USERS:
            return f"D{channel}", {"is_im": True, "is_member": True, "user": channel}
        info = self.channels.get(channel)
        return (channel, info) if info is not None else None

    def _post(self, args: dict[str, Any]) -> Response:
        found = self._conversation(str(args.get("channel")))
        if found is None:
            return _error("channel_not_found")
        channel, info = found
        if not info.get("is_member"):
            return _error("not_in_channel")
        if (problem := blocks_problem(args.get("blocks"))) is not None:
            return _error(problem)
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        message = {"type": "message", "ts": ts, "text": args.get("text"), "blocks": args.get("blocks")}
        if args.get("thread_ts"):
            with self._lock:
                if not any(m["ts"] == args["thread_ts"] for m in self.messages.get(channel, [])):
                    return _error("thread_not_found")
                self.threaded.append({**message, "channel": channel, "thread_ts": args["thread_ts"]})
            return _ok(channel=channel, ts=ts, message=message)
        if args.get("metadata"):
            message["metadata"] = args["metadata"]
        with self._lock:
            self.messages.setdefault(channel, []).append(message)
            lose = self.lose_post_responses > 0
            self.lose_post_responses -= int(lose)
        if lose:
            return JSONResponse({"ok": False, "error": "internal_error"}, status_code=500)
        return _ok(channel=channel, ts=ts, message=message)

    def _update(self, args: dict[str, Any]) -> Response:
        if (problem := blocks_problem(args.get("blocks"))) is not None:
            return _error(problem)
        with self._lock:
            for message in self.messages.get(str(args.get("channel")), []):
                if message["ts"] == args.get("ts"):
                    message.update(text=args.get("text"), blocks=args.get("blocks"))
                    return _ok(channel=args["channel"], ts=args["ts"])
        return _error("message_not_found")

    def _history(self, args: dict[str, Any]) -> Response:
        with_metadata = str(args.get("include_all_metadata")) in ("1", "true", "True")
        oldest = float(args.get("oldest") or 0)
        with self._lock:
            found = [
                dict(m) for m in self.messages.get(str(args.get("channel")), []) if float(m["ts"]) >= oldest
            ]
        if not with_metadata:
            for message in found:
                message.pop("metadata", None)
        return _ok(messages=list(reversed(found)), has_more=False, response_metadata={"next_cursor": ""})

    def _open(self, args: dict[str, Any]) -> Response:
        found = self._conversation(str(args.get("users")))
        return _ok(channel={"id": found[0]}) if found else _error("user_not_found")

    def _info(self, args: dict[str, Any]) -> Response:
        found = self._conversation(str(args.get("channel")))
        if found is None:
            return _error("channel_not_found")
        return _ok(channel={"id": found[0], **found[1], "is_archived": False})

    def _user(self, args: dict[str, Any]) -> Response:
        user = str(args.get("user"))
        if user not in USERS:
            return _error("user_not_found")
        real = USERS[user]
        return _ok(user={"id": user, "name": real.split()[0].lower(), "profile": {"real_name": real}})

    def _auth(self, args: dict[str, Any]) -> Response:
        body = {
            "ok": True,
            "url": "https://fake.slack.com/",
            "team": "Fake",
            "user": "humangate",
            "bot_id": "B1",
        }
        return JSONResponse(body, headers={"x-oauth-scopes": self.scopes})

    def _group_users(self, args: dict[str, Any]) -> Response:
        if "usergroups:read" not in self.scopes.split(","):
            return _error("missing_scope")
        with self._lock:
            users = self.groups.get(str(args.get("usergroup")))
            users = list(users) if users is not None else None
        return _error("no_such_subteam") if users is None else _ok(users=users)

    def _views_open(self, args: dict[str, Any]) -> Response:
        if not args.get("trigger_id"):
            return _error("invalid_trigger_id")
        return _ok(view={"id": f"V{next(self._ts)}", **args["view"]})


_METHODS = {
    "chat.postMessage": FakeSlack._post,
    "chat.update": FakeSlack._update,
    "conversations.history": FakeSlack._history,
    "conversations.open": FakeSlack._open,
    "conversations.info": FakeSlack._info,
    "users.info": FakeSlack._user,
    "auth.test": FakeSlack._auth,
    "views.open": FakeSlack._views_open,
    "usergroups.users.list": FakeSlack._group_users,
}


def _ok(**data: Any) -> Response:
    return JSONResponse({"ok": True, **data})


def _error(error: str) -> Response:
    return JSONResponse({"ok": False, "error": error})


MAX_BLOCKS = 50
MAX_BLOCKS_TEXT = 13_000
"""Slack refuses a message past 50 blocks (``invalid_blocks``) or with more text in its blocks than
about 13,000 characters (``msg_blocks_too_long``)."""


def blocks_problem(blocks: Any) -> str | None:
    """The error Slack answers a message's ``blocks`` with (a subset of its checks), or ``None``."""
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    if not blocks:
        return None
    if len(blocks) > MAX_BLOCKS:
        return "invalid_blocks"

    def text_of(value: Any) -> int:
        if isinstance(value, dict):
            own = len(value["text"]) if isinstance(value.get("text"), str) else 0
            return own + sum(text_of(child) for key, child in value.items() if key != "text")
        if isinstance(value, list):
            return sum(text_of(child) for child in value)
        return 0

    return "msg_blocks_too_long" if text_of(blocks) > MAX_BLOCKS_TEXT else None
