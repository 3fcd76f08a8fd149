"""The accepted forms of the settings whose text has a shape (URLs, addresses, ids, key lists).

A ``Form`` is metadata on a field of ``schemas.settings.Settings`` (``Annotated[str, HTTP_URL]``):
it checks the value when the settings are read, and says what is accepted when a value breaks it
(``schemas.setting_errors``). Each carries a value that breaks it, so the settings walk test
(tests/schemas/test_setting_errors.py) covers a new setting the day it is added.
"""

from __future__ import annotations

import ipaddress
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import GetCoreSchemaHandler, SecretStr
from pydantic_core import core_schema

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""Characters no setting holds: a line break or tab in a value is a pasting accident."""

ONE_LINE = "text on one line, without control characters"
"""The accepted form of a setting that takes any text."""


@dataclass(frozen=True, slots=True)
class Form:
    """What a setting's text must look like: ``problem`` says what is wrong with one value (or one
    entry of a comma-separated list), ``None`` when it is right; ``text`` is the accepted form."""

    text: str
    bad: str
    """A value of the setting that breaks the form (for tests)."""
    problem: Callable[[str], str | None]

    def check(self, value: Any) -> Any:
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            text = entry.get_secret_value() if isinstance(entry, SecretStr) else str(entry)
            why = self.problem(text)
            if why is not None:
                raise ValueError(why)
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))


def form_of(annotation: Any) -> Form | None:
    """The ``Form`` in a field's annotation (through ``| None`` and ``Annotated``), if any."""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, Form):
            return meta
    for arg in typing.get_args(annotation):
        found = form_of(arg)
        if found is not None:
            return found
    return None


def _url(schemes: tuple[str, ...]) -> Callable[[str], str | None]:
    def problem(text: str) -> str | None:
        parts = urlsplit(text)
        if parts.scheme not in schemes:
            got = f"{parts.scheme}://" if parts.scheme else "no scheme"
            return f"starts with {got}, not {' or '.join(f'{s}://' for s in schemes)}"
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number from 0 to 65535
        except ValueError:
            return "has a port that is not a number from 1 to 65535"
        if not parts.hostname and parts.scheme != "unix":
            return "names no host"
        return None

    return problem


def _proxy(text: str) -> str | None:
    if text == "*":
        return None
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return f"{text[:60]!r} is not an IP address or network"
    return None


def _host(text: str) -> str | None:
    if "://" in text or "/" in text or " " in text:
        return f"{text[:60]!r} is a URL or path, not a host name"
    return None


def _api_key(text: str) -> str | None:
    for number, entry in enumerate((part for part in text.split(",") if part.strip()), 1):
        name, sep, key = entry.partition(":")
        if not sep or not name.strip() or not key.strip():
            return f"entry {number} is not name:key"
    return None


def _digits(text: str) -> str | None:
    return None if text.isdigit() else "is not a number id (digits only)"


def _slack_user(text: str) -> str | None:
    return None if re.fullmatch(r"[UW][A-Z0-9]+", text) else f"{text[:40]!r} is not a Slack user id"


HTTP_URL = Form(
    "an http:// or https:// URL, like https://example.com/api", "ftp://example.com", _url(("http", "https"))
)
"""A web address: public URL, platform API bases, endpoints."""

REDIS_URL = Form(
    "a redis:// or rediss:// (TLS) URL, like redis://localhost:6379/0",
    "http://localhost:6379",
    _url(("redis", "rediss", "unix")),
)
"""The Redis humangate uses."""

PROXIES = Form(
    "IP addresses or networks, comma-separated, like 127.0.0.1,10.0.0.0/8 (or *)", "proxy.lan", _proxy
)
"""Reverse proxies whose ``X-Forwarded-For`` is believed."""

HOSTS = Form(
    "host names, each with an optional port or :*, comma-separated, like humangate.example.org,127.0.0.1:*",
    "https://humangate.example.org/",
    _host,
)
"""Host headers the gateway answers."""

API_KEYS = Form("name:key pairs, comma-separated, like deploy-bot:hg_abc,ci:hg_def", "hg_no_name", _api_key)
"""Keys from the environment."""

DISCORD_ID = Form("a Discord id (digits), like 1100000000000000001", "my-app", _digits)
"""One Discord snowflake (the application, a channel)."""

DISCORD_IDS = Form("Discord ids (digits), comma-separated, like 81234,99123", "@someone", _digits)
"""Discord snowflakes (users, roles)."""

SLACK_USERS = Form("Slack user ids, comma-separated, like U012AB3CD,W0ADMIN", "@alice", _slack_user)
"""Slack users allowed to answer."""


def one_line(value: Any) -> Any:
    """A raw environment value, unless it holds a control character (``ValueError``)."""
    for entry in value if isinstance(value, list) else [value]:
        text = entry.get_secret_value() if isinstance(entry, SecretStr) else entry
        if isinstance(text, str) and (found := CONTROL.search(text)):
            raise ValueError(f"holds a control character (U+{ord(found.group()):04X}); accepted: {ONE_LINE}")
    return value
