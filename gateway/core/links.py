"""Links humangate hands out, and reading them back. Form links are capabilities: never log them.

A form token is ``<id>.<secret>``: the Human Function's id (lowercase hex, not secret) and a
URL-safe random secret of at least 128 bits. ``parse_form_token`` accepts only that shape, so
anything else is refused without a Redis read.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass, field

from schemas.models import HumanFunction
from schemas.settings import Settings

FORM_TOKEN = re.compile(r"([0-9a-f]{8,64})\.([A-Za-z0-9_-]{22,128})")
"""The shape of every form token humangate issues (the id, a dot, the secret)."""


@dataclass(frozen=True, slots=True)
class FormToken:
    """A well-formed form token, read but not yet checked against any Human Function."""

    hf_id: str
    secret: str = field(repr=False)

    def opens(self, hf: HumanFunction) -> bool:
        """Whether this token's secret is ``hf``'s (compared in constant time)."""
        return hf.id == self.hf_id and hmac.compare_digest(hf.form_secret.encode(), self.secret.encode())


def parse_form_token(token: str) -> FormToken | None:
    """The id and secret of a well-formed token; ``None`` for anything humangate never issues."""
    match = FORM_TOKEN.fullmatch(token)
    return FormToken(match.group(1), match.group(2)) if match else None


def form_path(hf: HumanFunction) -> str:
    return f"/f/{hf.form_token}"


INBOX_PATH = "/inbox"
"""Where the operators' inbox is served (docs/inbox.md)."""


def inbox_url(settings: Settings) -> str:
    """The absolute URL of the inbox, under ``HUMANGATE_PUBLIC_URL``."""
    return settings.public_base + INBOX_PATH


def form_url(settings: Settings, hf: HumanFunction) -> str:
    """The absolute URL of ``hf``'s hosted form, under ``HUMANGATE_PUBLIC_URL``."""
    return settings.public_base + form_path(hf)
