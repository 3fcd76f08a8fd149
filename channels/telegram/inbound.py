"""Both ways Telegram's updates reach humangate, into the one handler (``channels.telegram.updates``).

- **Long polling** (no ``HUMANGATE_TELEGRAM_WEBHOOK_SECRET``): the channel's ``Opening`` ``poll``,
  held by one process of the installation under the ``telegram:0`` lease (docs/scaling.md). It deletes any
  webhook, then calls ``getUpdates`` with a ``POLL_SECONDS`` long poll from the offset kept in Redis
  (``Desk.position``): each update is applied, then the offset moves past it (``Desk.advance``), so a
  process taking over after a SIGKILL reads again from the first update not yet applied, and one
  applied but not yet passed is skipped by its mark. An idle poll costs one ``getUpdates`` per
  ``POLL_SECONDS`` and no Redis command beyond the lease's.
- **Webhook** (the secret set): Telegram POSTs each update to ``/telegram/updates`` with the secret
  in ``X-Telegram-Bot-Api-Secret-Token`` (compared in constant time; else 401). The ``Opening``
  ``register`` then only calls ``setWebhook`` once per installation, under the same lease.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from channels.base import Connected, Desk, Inbound
from channels.telegram.api import POLL_SECONDS, POLL_TIMEOUT, TelegramApi, TelegramApiError
from channels.telegram.updates import apply_update
from schemas.errors import (
    DeliveryError,
    InvalidJsonError,
    InvalidRequestError,
    SignatureError,
    StoreUnavailableError,
)
from schemas.json_text import read_json
from schemas.settings import Settings

logger = logging.getLogger(__name__)

UPDATES_PATH = "/telegram/updates"
SECRET_HEADER = "x-telegram-bot-api-secret-token"
ALLOWED_UPDATES = ["message", "callback_query"]
"""The update types humangate reads (Telegram sends no others)."""

RETRY_FIRST = 1.0
"""Seconds before polling again after a failure; doubled after each, up to ``RETRY_MOST``."""
RETRY_MOST = 30.0


def webhook_url(settings: Settings) -> str:
    return settings.public_base + UPDATES_PATH


def check_secret(headers: Mapping[str, str], settings: Settings) -> None:
    """Raise ``SignatureError`` unless the request carries the webhook's secret (constant time)."""
    secret = settings.telegram_webhook_secret
    if secret is None:
        raise SignatureError(
            "HUMANGATE_TELEGRAM_WEBHOOK_SECRET is not set: this gateway reads Telegram by long polling"
        )
    given = headers.get(SECRET_HEADER, "")
    if not hmac.compare_digest(given.encode(), secret.get_secret_value().encode()):
        raise SignatureError("missing or wrong X-Telegram-Bot-Api-Secret-Token header")


async def updates(request: Request, inbound: Inbound, desk: Desk) -> Response:
    """``POST /telegram/updates``: one verified update, applied once, then 200 (a 503 while Redis is
    unavailable makes Telegram send it again)."""
    try:
        update = read_json(inbound.body)
    except InvalidJsonError as exc:
        raise InvalidRequestError(str(exc)) from None
    if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
        raise InvalidRequestError("the body must be a JSON Telegram update with a numeric update_id")
    await apply_update(desk, update)
    return JSONResponse({"ok": True})


async def poll(held: Connected, desk: Desk) -> None:
    """Read updates by long polling while this process holds the lease (cancelled when it is lost)."""
    api: TelegramApi = await desk.client()
    stream = f"updates:{api.bot_id}"
    wait = RETRY_FIRST
    offset: int | None = None
    ready = False
    while True:
        try:
            if not ready:
                await api.call("deleteWebhook", {"drop_pending_updates": False})
                offset = await desk.position(stream)
                ready = True
                logger.info("long polling channel=telegram slot=%s offset=%s", held.slot, offset)
            params: dict[str, Any] = {"timeout": POLL_SECONDS, "allowed_updates": ALLOWED_UPDATES}
            if offset is not None:
                params["offset"] = offset
            found = await api.call("getUpdates", params, timeout=POLL_TIMEOUT)
            for update in found if isinstance(found, list) else []:
                held.touch()
                await apply_update(desk, update)
                update_id = update.get("update_id") if isinstance(update, Mapping) else None
                if isinstance(update_id, int):
                    offset = update_id + 1
                    await desk.advance(stream, offset)
            wait = RETRY_FIRST
        except TelegramApiError as exc:
            if exc.code == 409:  # a webhook is set (another deployment?): delete it and poll again
                ready = False
            logger.warning("getUpdates failed channel=telegram: %s; again in %.0f s", exc, wait)
            await asyncio.sleep(exc.retry_after or wait)
            wait = min(wait * 2, RETRY_MOST)
        except (DeliveryError, StoreUnavailableError) as exc:
            logger.warning("long polling failed channel=telegram: %s; again in %.0f s", exc, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_MOST)


async def register(held: Connected, desk: Desk) -> None:
    """Register the webhook with ``setWebhook`` (its URL and secret), then keep the lease (one
    registration per installation; ``humangate doctor`` shows the mode and its holder)."""
    api: TelegramApi = await desk.client()
    settings = desk.settings
    secret = settings.telegram_webhook_secret
    wait = RETRY_FIRST
    while secret is not None:
        try:
            await api.call(
                "setWebhook",
                {
                    "url": webhook_url(settings),
                    "secret_token": secret.get_secret_value(),
                    "allowed_updates": ALLOWED_UPDATES,
                },
            )
            logger.info("webhook registered channel=telegram url=%s", webhook_url(settings))
            break
        except DeliveryError as exc:
            logger.warning("setWebhook failed channel=telegram: %s; again in %.0f s", exc, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_MOST)
    await asyncio.Event().wait()
