"""Slack Web API calls beyond posting, and Slack's errors in words a person can act on.

The text of a ``DeliveryError`` reaches the waiting agent's progress message and ``humangate
doctor``, so each one says what to change (a setting, a scope, an invitation), not just Slack's code.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from schemas.errors import DeliveryError
from schemas.models import HumanFunction

logger = logging.getLogger(__name__)

RESPONSE_EXCEPTIONS = (SlackApiError, aiohttp.ClientError, TimeoutError)
"""What a Web API call raises when Slack refused it or could not be reached in time."""

HISTORY_MARGIN_SECONDS = 120
"""How long before a request's creation its earlier post is looked for (clock skew with Slack)."""
HISTORY_PAGE_SIZE = 200
"""Messages fetched per ``conversations.history`` page."""
HISTORY_PAGES = 5
"""Pages looked through for an earlier post; a channel that busy gets a second post instead."""

_USER_ID = re.compile(r"[UW][A-Z0-9]+")
_CONVERSATION_ID = re.compile(r"[CGD][A-Z0-9]+")
_TRANSIENT = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
_TOKEN = (
    "SLACK_BOT_TOKEN was refused by Slack ({error}): use the Bot User OAuth Token (xoxb-...) from the "
    "app's OAuth & Permissions page"
)
_FIXES = {
    "channel_not_found": "channel {target} was not found: set HUMANGATE_SLACK_CHANNEL to the id of a "
    "channel the app can see (like C0123ABCD), or a user id (like U0123ABCD) for a direct message",
    "not_in_channel": "the app is not a member of channel {target}: invite it there with /invite @<app name>",
    "is_archived": "channel {target} is archived: unarchive it or set another HUMANGATE_SLACK_CHANNEL",
    "user_not_found": "user {target} does not exist in this workspace: check HUMANGATE_SLACK_CHANNEL",
    "missing_scope": "the app lacks the scope {needed}: add it under OAuth & Permissions > Bot Token "
    "Scopes and reinstall the app",
    "restricted_action": "the workspace does not let the app post in {target}",
    "message_not_found": "the message is gone (deleted in Slack)",
    "cant_update_message": "the message can no longer be edited by the app",
    "invalid_blocks": "Slack refused the message's layout (invalid_blocks); please report this",
    **dict.fromkeys(
        ("invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"), _TOKEN
    ),
}


def is_user_id(target: str) -> bool:
    """Whether ``HUMANGATE_SLACK_CHANNEL`` names a person (requests go to a direct message)."""
    return _USER_ID.fullmatch(target) is not None


def delivery_error(exc: Exception, target: str, doing: str) -> DeliveryError:
    """A Slack failure in plain words; ``retryable`` for rate limits, 5xx and the network."""
    if not isinstance(exc, SlackApiError):
        return DeliveryError(f"could not reach Slack to {doing} ({type(exc).__name__})", retryable=True)
    response = exc.response
    status = int(getattr(response, "status_code", 0) or getattr(response, "status", 0) or 0)
    data = getattr(response, "data", None)
    error = str(data.get("error") or "") if isinstance(data, Mapping) else ""
    if status == 429 or error == "ratelimited":
        return DeliveryError(f"Slack is rate limiting the app, so it could not {doing}", retryable=True)
    if status >= 500 or error in _TRANSIENT:
        return DeliveryError(
            f"Slack had a temporary problem ({error or f'HTTP {status}'}) when asked to {doing}",
            retryable=True,
        )
    if error in _FIXES:
        needed = str(data.get("needed") or "needed") if isinstance(data, Mapping) else "needed"
        fix = _FIXES[error].format(target=target, error=error, needed=needed)
        return DeliveryError(f"Slack: cannot {doing}: {fix}", retryable=False)
    return DeliveryError(f"Slack refused to {doing} ({error or f'HTTP {status}'})", retryable=False)


async def find_earlier_post(
    api: AsyncWebClient, target: str, hf: HumanFunction, event_type: str
) -> dict[str, Any] | None:
    """The refs of a message an earlier delivery attempt posted for ``hf``, found by its metadata.

    Raises a retryable ``DeliveryError`` when Slack cannot be asked now; when it refuses (a scope is
    missing), returns ``None`` after a warning, so the request is posted rather than never.
    """
    try:
        channel = target
        if is_user_id(target):
            opened = await api.conversations_open(users=target)
            channel = str(opened["channel"]["id"])
        cursor: str | None = None
        for _ in range(HISTORY_PAGES):
            page = await api.conversations_history(
                channel=channel,
                oldest=f"{hf.created_at - HISTORY_MARGIN_SECONDS:.6f}",
                include_all_metadata=True,
                limit=HISTORY_PAGE_SIZE,
                cursor=cursor,
            )
            for message in page.get("messages") or ():
                metadata = message.get("metadata") or {}
                payload = metadata.get("event_payload") or {}
                if metadata.get("event_type") == event_type and payload.get("hf_id") == hf.id:
                    return {"channel": channel, "ts": str(message["ts"])}
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                break
    except RESPONSE_EXCEPTIONS as exc:
        error = delivery_error(exc, target, "look for an earlier post")
        if error.retryable:
            raise error from exc
        logger.warning("cannot look for an earlier post hf=%s channel=slack (%s); posting", hf.id, error)
    return None


async def target_problems(api: AsyncWebClient, target: str, scopes: str | None) -> list[str]:
    """What keeps the app from posting to ``target`` and reading it back, for ``humangate doctor``.

    ``scopes`` is the token's ``x-oauth-scopes`` header from ``auth.test`` (``None`` if absent).
    """
    problems: list[str] = []
    needed = ["chat:write", "users:read"]
    try:
        if is_user_id(target):
            await api.users_info(user=target)
            needed += ["im:write", "im:history"]
        elif _CONVERSATION_ID.fullmatch(target):
            info = (await api.conversations_info(channel=target))["channel"]
            name = f"#{info.get('name')} ({target})" if info.get("name") else target
            if info.get("is_archived"):
                problems.append(
                    f"channel {name} is archived: unarchive it or set another HUMANGATE_SLACK_CHANNEL"
                )
            elif not info.get("is_im") and not info.get("is_member"):
                problems.append(
                    f"the app is not a member of {name}: invite it there with /invite @<app name>"
                )
            needed.append("groups:history" if info.get("is_private") else "channels:history")
        else:
            return [
                f"HUMANGATE_SLACK_CHANNEL must be a channel id (like C0123ABCD) or a user id (like "
                f"U0123ABCD), not {target!r}: copy it from the channel's details in Slack"
            ]
    except RESPONSE_EXCEPTIONS as exc:
        problems.append(str(delivery_error(exc, target, "check HUMANGATE_SLACK_CHANNEL")))
    if scopes is not None:
        granted = {scope.strip() for scope in scopes.split(",")}
        missing = [scope for scope in needed if scope not in granted]
        if missing:
            problems.append(
                f"the app lacks the scope(s) {', '.join(missing)}: add them under OAuth & Permissions > "
                "Bot Token Scopes and reinstall the app"
            )
    return problems
