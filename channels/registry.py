"""The one explicit table of channels. Adding a platform means adding a line here.

The gateway and the workers reach a platform only through this module: ``CHANNELS`` to deliver,
update and check; ``endpoints`` and ``body_limits`` to mount what each channel receives.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from channels.base import Channel, Endpoint
from channels.discord.channel import DiscordChannel
from channels.email.channel import EmailChannel
from channels.slack.channel import SlackChannel
from channels.teams.channel import TeamsChannel
from channels.telegram.channel import TelegramChannel
from channels.web.channel import WebChannel
from schemas.errors import NotConfiguredError
from schemas.settings import CHANNEL_NAMES, Settings

CHANNELS: dict[str, Channel] = {
    "slack": SlackChannel(),
    "discord": DiscordChannel(),
    "teams": TeamsChannel(),
    "web": WebChannel(),
    "telegram": TelegramChannel(),
    "email": EmailChannel(),
}
"""Every implemented channel by name, in ``uiType`` order."""


def channel_names() -> tuple[str, ...]:
    """The registered channels' names, in ``uiType`` order."""
    return tuple(CHANNELS)


def channel_literal() -> Any:
    """``Literal[<every registered name>]``, for a request model's ``uiType`` (read when the model
    is defined)."""
    return Literal[channel_names()]


def endpoints() -> Iterator[tuple[Channel, Endpoint]]:
    """Every endpoint of every registered channel, with its channel."""
    for channel in CHANNELS.values():
        for endpoint in channel.endpoints():
            yield channel, endpoint


def body_limits() -> dict[str, int]:
    """Body limit per path prefix of every channel endpoint (``Endpoint.limit_prefix``)."""
    return {endpoint.limit_prefix: endpoint.body_limit for _, endpoint in endpoints()}


def configured_channels(settings: Settings) -> list[str]:
    """Names of the channels whose required settings are all present."""
    return [name for name, channel in CHANNELS.items() if not channel.missing_settings(settings)]


def default_channel(settings: Settings) -> str:
    """``HUMANGATE_DEFAULT_CHANNEL``, else ``slack`` when Slack is configured, else ``web``."""
    if settings.default_channel:
        return settings.default_channel
    return "slack" if "slack" in configured_channels(settings) else "web"


def get_channel(name: str, settings: Settings) -> Channel:
    """The channel called ``name`` if it is configured; otherwise an error naming the configured ones."""
    configured = configured_channels(settings)
    if name in CHANNELS and name in configured:
        return CHANNELS[name]
    if name not in CHANNEL_NAMES and name not in CHANNELS:
        reason = f"unknown channel {name!r}"
    elif name not in CHANNELS:
        reason = f"channel {name!r} is not available in this version"
    else:
        missing = ", ".join(CHANNELS[name].missing_settings(settings))
        reason = f"channel {name!r} is not configured (missing {missing})"
    raise NotConfiguredError(f"{reason}; configured channels: {', '.join(configured) or 'none'}")
