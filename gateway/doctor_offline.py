"""What ``humangate doctor`` can tell without the network: each token's kind from its prefix or
shape, ids of the wrong form, a half-configured channel; every problem with its fix.

Only mistakes a value certainly is are reported (a Slack bot token that is an app-level token, a
Telegram token without its ``<digits>:`` bot id); a channel with such a problem is not asked its
platform, since the answer could only be "invalid token".
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import SecretStr

from schemas.settings import Settings

SLACK_KINDS = {
    "xoxb-": "a bot token",
    "xapp-": "an app-level token",
    "xoxp-": "a user token",
    "xoxe-": "a refresh token",
    "xoxa-": "a workspace token",
}
"""Slack's token prefixes and what each is (api.slack.com/authentication/token-types)."""

TELEGRAM_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]{20,}")
"""BotFather's token: the bot's numeric id, a colon, then its secret."""

TELEGRAM_CHAT = re.compile(r"-?\d+|@[A-Za-z][A-Za-z0-9_]{3,}")
"""A chat id (``-1001234567890``) or a public channel's ``@name``."""

GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""An Entra (Azure AD) id: the Teams app id, a tenant id."""

HOST_NAME = re.compile(r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")
"""A tenant named by its domain (``contoso.onmicrosoft.com``)."""


def _text(value: SecretStr | str | None) -> str | None:
    return value.get_secret_value().strip() if isinstance(value, SecretStr) else value


def _slack_kind(token: str) -> str:
    return next((kind for prefix, kind in SLACK_KINDS.items() if token.startswith(prefix)), "")


def slack(settings: Settings) -> list[str]:
    problems = []
    bot = _text(settings.slack_bot_token)
    if bot and not bot.startswith("xoxb-"):
        kind = _slack_kind(bot)
        where = " (it belongs in SLACK_APP_TOKEN)" if kind == "an app-level token" else ""
        problems.append(
            f"SLACK_BOT_TOKEN is {kind or 'not a Slack token'}{where}, not a bot token: copy the Bot User "
            "OAuth Token (xoxb-...) from the OAuth & Permissions page of your Slack app"
        )
    app = _text(settings.slack_app_token)
    if app and not app.startswith("xapp-"):
        kind = _slack_kind(app)
        where = " (it belongs in SLACK_BOT_TOKEN)" if kind == "a bot token" else ""
        problems.append(
            f"SLACK_APP_TOKEN is {kind or 'not a Slack token'}{where}, not an app-level token: make one "
            "(xapp-..., scope connections:write) under Basic Information > App-Level Tokens, or unset it "
            "to receive clicks at /slack/events"
        )
    secret = _text(settings.slack_signing_secret)
    if secret and _slack_kind(secret):
        problems.append(
            f"SLACK_SIGNING_SECRET is {_slack_kind(secret)}, not the signing secret: copy the Signing "
            "Secret from the Basic Information page of your Slack app"
        )
    return problems


def discord(settings: Settings) -> list[str]:
    token = _text(settings.discord_bot_token)
    if token and token.lower().startswith("bot "):
        return [
            "DISCORD_BOT_TOKEN starts with 'Bot ': set the token alone (humangate adds the 'Bot ' itself)"
        ]
    if token and (_slack_kind(token) or TELEGRAM_TOKEN.fullmatch(token)):
        platform = "Slack" if _slack_kind(token) else "Telegram"
        return [
            f"DISCORD_BOT_TOKEN is a {platform} token: copy the token from the Bot page of your "
            "application in the Discord Developer Portal"
        ]
    return []


def teams(settings: Settings) -> list[str]:
    problems = []
    if settings.teams_app_id and not GUID.fullmatch(settings.teams_app_id):
        problems.append(
            "TEAMS_APP_ID is not an id like 00000000-0000-0000-0000-000000000000: copy the Microsoft App "
            "ID from your Azure Bot's Configuration page"
        )
    tenant = settings.teams_tenant_id
    if tenant and not (GUID.fullmatch(tenant) or HOST_NAME.fullmatch(tenant)):
        problems.append(
            "TEAMS_TENANT_ID is neither a tenant id (00000000-0000-0000-0000-000000000000) nor a domain "
            "(contoso.onmicrosoft.com): copy the Directory (tenant) ID from Microsoft Entra ID's Overview"
        )
    return problems


def telegram(settings: Settings) -> list[str]:
    problems = []
    token = _text(settings.telegram_bot_token)
    if token and not TELEGRAM_TOKEN.fullmatch(token):
        problems.append(
            "TELEGRAM_BOT_TOKEN is not of the form <digits>:<secret> (like 123456789:AAH...): copy the "
            "whole token BotFather gave (/mybots > API Token)"
        )
    chat = settings.telegram_chat_id
    if chat and not TELEGRAM_CHAT.fullmatch(chat.strip()):
        problems.append(
            "HUMANGATE_TELEGRAM_CHAT_ID is neither a chat id (like -1001234567890) nor a channel's "
            "@name: the chat id is in getUpdates' message.chat.id once someone writes in the chat"
        )
    return problems


CHECKS: dict[str, Callable[[Settings], list[str]]] = {
    "slack": slack,
    "discord": discord,
    "teams": teams,
    "telegram": telegram,
}
"""The offline checks per channel (the web form and email are checked when the settings are read)."""


def offline_problems(name: str, settings: Settings) -> list[str]:
    """What is certainly wrong with channel ``name``'s settings, each with its fix."""
    check = CHECKS.get(name)
    return check(settings) if check is not None else []
