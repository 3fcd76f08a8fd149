"""A fake Telegram Bot API (``/bot<token>/<method>``) on loopback, spoken to by the real channel.

It keeps the chat's messages (``sendMessage``, ``editMessageText``, ``editMessageReplyMarkup``), records
every ``answerCallbackQuery``, and serves ``getUpdates`` as Telegram does: a long poll held up to its
``timeout`` until an update at or above ``offset`` arrives, every update below ``offset`` confirmed
(forgotten), and 409 while a webhook is set (``setWebhook`` / ``deleteWebhook``). Tests push updates
(a tap on a button, a reply to a message) with ``tap`` / ``reply``; ``deliver_webhook`` POSTs one to a
gateway's ``/telegram/updates`` with the secret header instead. ``server.script`` makes it answer a
429 with ``retry_after``. Like Telegram, it refuses a text in HTML mode whose tags it does not know or
that are not balanced ("can't parse entities") and one longer than 4,096 characters once its entities
are parsed ("message is too long").
"""

from __future__ import annotations

import asyncio
import html
import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import httpx
from starlette.responses import JSONResponse, Response

from tests.fakes.server import WAIT, Call, FakeServer

TOKEN = "123456789:AAFakeTelegramTokenForTests_xyz"
BOT_ID = 123456789
CHAT_ID = -1001234567890
SECRET = "webhook-secret_1"


@dataclass(frozen=True)
class User:
    id: int
    first_name: str

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "is_bot": False, "first_name": self.first_name}


ADA = User(111111, "Ada")
BO = User(222222, "Bo")
CY = User(333333, "Cy")
ANONYMOUS_ADMIN = User(1087968824, "Group")


@dataclass
class FakeTelegram:
    """The fake API and the chat it holds."""

    server: FakeServer = field(init=False)
    messages: dict[int, dict[str, Any]] = field(default_factory=dict)
    updates: list[dict[str, Any]] = field(default_factory=list)
    webhook: dict[str, Any] | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _update_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(700000001))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = FakeServer(self._handle)

    @property
    def url(self) -> str:
        return self.server.url

    def env(self, *, webhook: bool = False) -> dict[str, str]:
        env = {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "HUMANGATE_TELEGRAM_CHAT_ID": str(CHAT_ID),
            "HUMANGATE_TELEGRAM_API_URL": self.url,
        }
        if webhook:
            env["HUMANGATE_TELEGRAM_WEBHOOK_SECRET"] = SECRET
        return env

    # What the bot did.

    def method_calls(self, method: str) -> list[Call]:
        return self.server.calls_to(f"/bot{TOKEN}/{method}")

    def answers(self) -> list[dict[str, Any]]:
        """Every ``answerCallbackQuery``'s arguments, in order."""
        return [call.json() for call in self.method_calls("answerCallbackQuery")]

    async def answer_to(self, query_id: str) -> dict[str, Any]:
        """The ``answerCallbackQuery`` of one tap, once it arrived."""
        path = f"/bot{TOKEN}/answerCallbackQuery"

        def found(calls: list[Call]) -> dict[str, Any] | None:
            return next(
                (c.json() for c in calls if c.path == path and c.json().get("callback_query_id") == query_id),
                None,
            )

        return await self.server.wait_for(found)

    def sent(self) -> list[dict[str, Any]]:
        """Every message the bot sent, in order (as stored, edits applied)."""
        with self._lock:
            return [dict(m) for m in self.messages.values()]

    async def message_where(self, check: Any, timeout: float = WAIT) -> dict[str, Any]:
        """The first message the bot sent for which ``check(message)`` holds, once there is one."""

        def found(_: list[Call]) -> dict[str, Any] | None:
            return next((m for m in self.sent() if check(m)), None)

        return await self.server.wait_for(found, timeout)

    def edits_of(self, message_id: int) -> list[dict[str, Any]]:
        return [
            c.json()
            for c in self.method_calls("editMessageText")
            if int(c.json().get("message_id", 0)) == message_id
        ]

    # What people do.

    def push(self, update: dict[str, Any]) -> dict[str, Any]:
        """Queue an update for ``getUpdates`` (``update_id`` assigned here)."""
        with self._lock:
            update = {"update_id": next(self._update_ids), **update}
            self.updates.append(update)
            waiters = list(self._waiters)
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)
        return update

    def tap_update(self, message: dict[str, Any], text: str, user: User = ADA) -> dict[str, Any]:
        """A ``callback_query`` update: ``user`` taps the button titled ``text`` of ``message``."""
        data = button_data(message, text)
        query = {
            "id": f"q{next(self._ids)}",
            "from": user.json(),
            "message": message,
            "chat_instance": "1",
            "data": data,
        }
        return {"callback_query": query}

    def numbered(self, update: dict[str, Any]) -> dict[str, Any]:
        """``update`` with a fresh ``update_id`` (for ``deliver_webhook``)."""
        with self._lock:
            return {"update_id": next(self._update_ids), **update}

    def tap(self, message: dict[str, Any], text: str, user: User = ADA) -> dict[str, Any]:
        """Push a tap; the pushed update."""
        return self.push(self.tap_update(message, text, user))

    def reply_update(
        self, to: dict[str, Any], text: str, user: User = ADA, *, sender_chat: bool = False
    ) -> dict[str, Any]:
        """A ``message`` update: ``user`` replies ``text`` to ``to`` (as the group when ``sender_chat``)."""
        with self._lock:
            message_id = next(self._ids) + 100000
        message: dict[str, Any] = {
            "message_id": message_id,
            "from": user.json() if not sender_chat else {**ANONYMOUS_ADMIN.json(), "is_bot": True},
            "chat": {"id": CHAT_ID, "type": "supergroup"},
            "date": int(time.time()),
            "text": text,
            "reply_to_message": to,
        }
        if sender_chat:
            message["sender_chat"] = {"id": CHAT_ID, "type": "supergroup", "title": "Ops"}
        return {"message": message}

    def reply(self, to: dict[str, Any], text: str, user: User = ADA, **kwargs: Any) -> dict[str, Any]:
        return self.push(self.reply_update(to, text, user, **kwargs))

    def deliver_webhook(
        self, gateway_url: str, update: dict[str, Any], secret: str = SECRET
    ) -> httpx.Response:
        """POST one update to a gateway's webhook, as Telegram does (``update_id`` assigned if absent)."""
        if "update_id" not in update:
            update = {"update_id": next(self._update_ids), **update}
        return httpx.post(
            f"{gateway_url}/telegram/updates",
            json=update,
            headers={"X-Telegram-Bot-Api-Secret-Token": secret},
            timeout=WAIT,
        )

    # The API.

    async def _handle(self, call: Call) -> Response:
        prefix = f"/bot{TOKEN}/"
        if not call.path.startswith(prefix):
            return _error(401, "Unauthorized")
        method = call.path.removeprefix(prefix)
        args = call.json() or {}
        if method == "getUpdates":
            return await self._get_updates(args)
        with self._lock:
            return self._method(method, args)

    def _method(self, method: str, args: dict[str, Any]) -> Response:
        if method == "getMe":
            return _ok({"id": BOT_ID, "is_bot": True, "first_name": "humangate", "username": "hg_test_bot"})
        if method == "getChat":
            if str(args.get("chat_id")) != str(CHAT_ID):
                return _error(400, "Bad Request: chat not found")
            return _ok({"id": CHAT_ID, "type": "supergroup", "title": "Ops"})
        if method in ("sendMessage", "editMessageText") and (problem := text_problem(args)):
            return _error(400, f"Bad Request: {problem}")
        if method == "sendMessage":
            if str(args.get("chat_id")) != str(CHAT_ID):
                return _error(400, "Bad Request: chat not found")
            message_id = next(self._ids)
            message: dict[str, Any] = {
                "message_id": message_id,
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "humangate"},
                "chat": {"id": CHAT_ID, "type": "supergroup"},
                "date": int(time.time()),
                "text": _plain(str(args.get("text", ""))),
                "html": args.get("text"),
                "reply_markup": args.get("reply_markup"),
                "reply_to": (args.get("reply_parameters") or {}).get("message_id"),
            }
            self.messages[message_id] = message
            return _ok({k: v for k, v in message.items() if k not in ("html", "reply_to")})
        if method in ("editMessageText", "editMessageReplyMarkup"):
            edited = self.messages.get(int(args.get("message_id", 0)))
            if edited is None:
                return _error(400, "Bad Request: message to edit not found")
            if method == "editMessageText":
                edited["text"], edited["html"] = _plain(str(args.get("text", ""))), args.get("text")
            edited["reply_markup"] = args.get("reply_markup")
            return _ok(True)
        if method == "answerCallbackQuery":
            return _ok(True)
        if method == "setWebhook":
            self.webhook = dict(args)
            return _ok(True)
        if method == "deleteWebhook":
            self.webhook = None
            return _ok(True)
        return _error(404, "Not Found")

    async def _get_updates(self, args: dict[str, Any]) -> Response:
        if self.webhook is not None:
            return _error(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = args.get("offset")
        deadline = time.monotonic() + float(args.get("timeout", 0))
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            self._waiters.append(entry)
        try:
            while True:
                with self._lock:
                    if isinstance(offset, int):  # Telegram forgets every update below the offset
                        self.updates = [u for u in self.updates if u["update_id"] >= offset]
                    found = list(self.updates)
                    event.clear()
                left = deadline - time.monotonic()
                if found or left <= 0:
                    return _ok(found)
                try:
                    await asyncio.wait_for(event.wait(), left)
                except TimeoutError:
                    pass
        finally:
            with self._lock:
                self._waiters.remove(entry)


def button_data(message: dict[str, Any], text: str) -> str:
    """The ``callback_data`` of the button titled ``text`` in ``message``'s inline keyboard."""
    rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
    for row in rows:
        for button in row:
            if button.get("text") == text:
                return str(button["callback_data"])
    titles = [button.get("text") for row in rows for button in row]
    raise AssertionError(f"no button {text!r} in the message; its buttons are {titles}")


MAX_TEXT = 4096
"""Characters of a message's text after its entities are parsed (UTF-16 code units)."""
HTML_TAGS = frozenset({"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre"})
HTML_TAGS |= {"blockquote", "span", "tg-spoiler", "tg-emoji"}
"""The tags of Telegram's HTML parse mode."""


class _Entities(HTMLParser):
    """Reads an HTML-mode text as Telegram does: known tags, balanced, and the text they leave."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.text: list[str] = []
        self.problem = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in HTML_TAGS:
            self.problem = self.problem or f'can\'t parse entities: unsupported start tag "{tag}"'
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.problem = (
                self.problem or f"can't parse entities: can't find end tag corresponding to \"{tag}\""
            )
        else:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def text_problem(args: dict[str, Any]) -> str:
    """Why Telegram would refuse this message's text, or ``''``."""
    text = str(args.get("text", ""))
    if args.get("parse_mode") == "HTML":
        entities = _Entities()
        entities.feed(text)
        entities.close()
        if entities.problem or entities.open:
            return entities.problem or "can't parse entities: unclosed start tag"
        text = "".join(entities.text)
    if not text.strip():
        return "message text is empty"
    if len(text.encode("utf-16-le")) // 2 > MAX_TEXT:
        return "message is too long"
    return ""


def _plain(html_text: str) -> str:
    """The text people see of an HTML-mode message (tags dropped, entities read)."""
    return html.unescape(re.sub(r"<[^>]+>", "", html_text))


def _ok(result: Any) -> Response:
    return JSONResponse({"ok": True, "result": result})


def _error(code: int, description: str, **parameters: Any) -> Response:
    body: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return JSONResponse(body, status_code=code)


def rate_limited(retry_after: int) -> dict[str, Any]:
    """A 429 body with ``parameters.retry_after`` (for ``server.script``)."""
    return {
        "ok": False,
        "error_code": 429,
        "description": f"Too Many Requests: retry after {retry_after}",
        "parameters": {"retry_after": retry_after},
    }
