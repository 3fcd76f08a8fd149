"""The Slack Web API client humangate opens: where it points, its timeout and its retries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from schemas.settings import Settings

API_TIMEOUT = 10.0
"""Seconds one Slack Web API call may take, connecting included."""
RATE_LIMIT_RETRIES = 2
"""Times one call is retried after a 429, each after the ``Retry-After`` Slack asked for."""
CONNECT_RETRIES = 2
"""Times one call is retried when the connection could not even be opened (nothing was sent)."""


@dataclass(frozen=True, slots=True)
class SlackClient:
    """What ``SlackChannel.connect`` yields: the Web API client and where requests are posted."""

    api: AsyncWebClient
    target: str
    """``HUMANGATE_SLACK_CHANNEL``: a channel id, or a user id for a direct message (a request's
    policy target, ``HumanFunction.target``, replaces it)."""


def api_base(settings: Settings) -> str:
    """``HUMANGATE_SLACK_API_URL`` with the trailing slash slack-sdk joins method names to."""
    return settings.slack_api_url.rstrip("/") + "/"


def retry_handlers() -> list[Any]:
    """Retry a call after a 429 (waiting ``Retry-After``), or when the connection never opened.

    A call that may have reached Slack (a 5xx, a dropped response) is not retried here: posting it
    again could post twice; the delivery job's own retry looks for the earlier post first.
    """
    return [
        AsyncConnectionErrorRetryHandler(
            max_retry_count=CONNECT_RETRIES, error_types=[aiohttp.ClientConnectorError]
        ),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
    ]
