"""The Telegram Bot API methods humangate calls, over httpx at ``HUMANGATE_TELEGRAM_API_URL``.

A method is ``POST <base>/bot<token>/<method>`` with a JSON body; Telegram answers
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code", "description", "parameters"}``.
The token is in the URL's path, so it must never reach a log line or an exception message: httpx's
own request logging is kept at WARNING, and every failure here is reworded without the URL.

Every call has an explicit timeout. Failures become ``DeliveryError``: retryable when nothing can
have been done (the connection never opened, a 429, which Telegram refuses before acting), not
retryable when a person must fix something (a refused token, a missing chat) or when Telegram may
have acted without saying so (a timeout or a 5xx after ``sendMessage``: posting again could post
twice). A 429's ``parameters.retry_after`` is waited out in place when it is short
(``MAX_INLINE_WAIT``); a longer one fails the call as retryable, naming the wait and carrying it
(``DeliveryError.retry_after``), so a delivery job is retried no sooner (``workers.jobs``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import httpx

from schemas.errors import DeliveryError

logger = logging.getLogger(__name__)

CALL_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
"""Timeouts of one ordinary Bot API call (each of connect, write, read, pool)."""

POLL_SECONDS = 25
"""``getUpdates``'s long-poll ``timeout``: Telegram holds an idle poll this long (one call per 25 s)."""

POLL_TIMEOUT = httpx.Timeout(POLL_SECONDS + 10.0, connect=5.0)
"""Timeouts of one ``getUpdates``: the read outlasts the long poll by 10 s."""

MAX_INLINE_WAIT = 5.0
"""Longest 429 ``retry_after`` waited out inside a call; a longer one fails it as retryable."""

POSTING_METHODS = frozenset({"sendMessage"})
"""Methods that create something: after an unclear failure they must not be sent again."""

# httpx logs every request's URL at INFO, and the bot token is in that URL.
logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger("httpx").level))


class TelegramApiError(DeliveryError):
    """Telegram refused a call: its ``error_code``, ``description`` and, for a 429, ``retry_after``."""

    def __init__(
        self, message: str, *, retryable: bool, code: int, description: str, retry_after: float | None = None
    ) -> None:
        super().__init__(message, retryable=retryable, retry_after=retry_after)
        self.code = code
        self.description = description


class TelegramApi:
    """One bot's Bot API at one base URL; ``chat_id`` is ``HUMANGATE_TELEGRAM_CHAT_ID``."""

    def __init__(
        self, base_url: str, token: str, chat_id: str = "", *, http: httpx.AsyncClient | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self.chat_id = chat_id
        self._token = token
        self._http = http or httpx.AsyncClient(timeout=CALL_TIMEOUT)

    @property
    def bot_id(self) -> str:
        """The bot's user id: the token's part before the colon (not secret; names the bot)."""
        return self._token.split(":", 1)[0]

    async def close(self) -> None:
        await self._http.aclose()

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: httpx.Timeout = CALL_TIMEOUT
    ) -> Any:
        """The ``result`` of ``method``; raises ``TelegramApiError`` or ``DeliveryError``."""
        waited = 0.0
        while True:
            try:
                return await self._once(method, params or {}, timeout)
            except TelegramApiError as exc:
                wait = exc.retry_after
                if wait is None or waited + wait > MAX_INLINE_WAIT:
                    raise
                logger.info("telegram asked to wait %.1f s before %s", wait, method)
                waited += wait
                await asyncio.sleep(wait)

    async def _once(self, method: str, params: Mapping[str, Any], timeout: httpx.Timeout) -> Any:
        url = f"{self.base_url}/bot{self._token}/{method}"
        posting = method in POSTING_METHODS
        try:
            response = await self._http.post(url, json=dict(params), timeout=timeout)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise DeliveryError(
                f"cannot reach Telegram at {self.base_url} to call {method} ({type(exc).__name__})",
                retryable=True,
            ) from None
        except httpx.HTTPError as exc:
            # ``from None``: httpx's exception carries the request, whose URL holds the token.
            raise DeliveryError(
                f"Telegram did not answer {method} ({type(exc).__name__})", retryable=not posting
            ) from None
        body = _json(response)
        if response.status_code == 200 and body.get("ok") is True:
            return body.get("result")
        raise refusal(method, response.status_code, body, self.chat_id, posting=posting)


def refusal(
    method: str, status: int, body: Mapping[str, Any], chat_id: str, *, posting: bool
) -> TelegramApiError:
    """A Bot API refusal in plain words, with what a person must do when it is theirs to fix."""
    code = int(body.get("error_code") or status)
    description = str(body.get("description") or f"HTTP {status}")
    parameters = body.get("parameters") if isinstance(body.get("parameters"), Mapping) else {}
    retry_after = parameters.get("retry_after") if isinstance(parameters, Mapping) else None

    def error(message: str, retryable: bool, wait: float | None = None) -> TelegramApiError:
        return TelegramApiError(
            f"{method}: {message}", retryable=retryable, code=code, description=description, retry_after=wait
        )

    if code == 429:
        wait = float(retry_after) if isinstance(retry_after, int | float) else 1.0
        return error(f"Telegram is rate limiting the bot: retry after {wait:g} seconds", True, wait)
    if code == 401:
        return error(
            "Telegram refused the bot token (401 Unauthorized): set TELEGRAM_BOT_TOKEN to the token "
            "BotFather gave you (/token in a chat with @BotFather)",
            False,
        )
    if code == 400 and "chat not found" in description.lower():
        return error(
            f"chat {chat_id} was not found (400 {description}): add the bot to the chat and set "
            "HUMANGATE_TELEGRAM_CHAT_ID to its id",
            False,
        )
    if code == 403:
        return error(
            f"the bot may not post in chat {chat_id} (403 {description}): add it to the chat "
            "(or, for a private chat, send it /start first)",
            False,
        )
    if code >= 500:
        return error(f"Telegram answered {code} ({description})", not posting)
    return error(f"Telegram refused it ({code} {description})", False)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
