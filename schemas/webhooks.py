"""The ``[[webhooks]]`` tables of the policy file: where events are sent, signed with which secret,
and which events (docs/webhooks.md). Pure data and rules; sending is the workers'.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, SecretStr

from schemas.unique import unique

EventType = Literal[
    "request.created",
    "request.posted",
    "request.reminded",
    "request.escalated",
    "request.approved",
    "request.refused",
    "request.ended",
]

EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
"""Every event a webhook may subscribe to (docs/webhooks.md#events), in the order of a request's life."""

SECRET_PREFIX = "whsec_"
"""What a Standard Webhooks secret starts with; base64 of the signing key follows."""

MIN_SECRET_BYTES = 24
"""The shortest signing key accepted (the Standard Webhooks specification asks for 24 to 64 bytes)."""

MAX_SECRET_BYTES = 64
"""The longest signing key accepted."""

_HTTP_URL = re.compile(r"https?://[^/\s?#]+(/\S*)?")
_WEBHOOKS_HEADER = re.compile(r"^\s*\[\[\s*webhooks\s*\]\]\s*(?:#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")


def _url(value: str) -> str:
    if not _HTTP_URL.fullmatch(value):
        raise ValueError(f"{value!r} is not an http:// or https:// URL (https is recommended)")
    return value


def _secret_text(value: object) -> object:
    # The rule is checked on the raw text so that a mistake never echoes the secret back.
    if isinstance(value, str):
        if not value.startswith(SECRET_PREFIX):
            raise ValueError(f"must start with {SECRET_PREFIX} (a Standard Webhooks secret)")
        try:
            key = base64.b64decode(value.removeprefix(SECRET_PREFIX), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"must be {SECRET_PREFIX} followed by base64") from None
        if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
            raise ValueError(
                f"must hold a key of {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes (got {len(key)})"
            )
        return SecretStr(value)
    return value


class Webhook(BaseModel):
    """One ``[[webhooks]]`` table: ``url`` and ``secret`` are required; ``events`` defaults to all."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    url: Annotated[str, AfterValidator(_url)]
    """Where events are POSTed."""
    secret: Annotated[SecretStr, BeforeValidator(_secret_text)]
    """``whsec_`` and base64 of the signing key; never printed or logged."""
    events: Annotated[list[EventType], AfterValidator(unique)] = Field(
        default_factory=lambda: list(EVENT_TYPES), min_length=1
    )
    """The events sent to this URL; left out, every event."""

    def wants(self, event: str) -> bool:
        return event in self.events

    def describe(self) -> str:
        """One line for ``humangate policy check`` (never the secret)."""
        return f"webhook {self.url}: {', '.join(self.events)}"


def webhook_lines(text: str) -> list[dict[str, int]]:
    """For each ``[[webhooks]]`` table of a TOML text, in order: ``""`` -> the line of its header,
    and each key -> its line (pydantic's ``loc`` of a mistake in table ``i`` is ``("webhooks", i, key)``)."""
    tables: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if _WEBHOOKS_HEADER.match(line):
            current = {"": number}
            tables.append(current)
        elif _ANY_HEADER.match(line):
            current = None
        elif current is not None and (key := _KEY.match(line)):
            current.setdefault(key.group(1), number)
    return tables
