"""The rules of the email channel's settings and targets: addresses, and the SMTP server's URL.

Pure: the settings (``HUMANGATE_EMAIL_FROM``, ``HUMANGATE_EMAIL_TO``, ``HUMANGATE_SMTP_URL``) and a
policy's ``targets.email`` are checked here, so a mistake is refused when the settings or the policy
file are read, naming the setting and the rule, never the password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit

ADDRESS = re.compile(r"[^@\s,<>\"()\[\];:\\]+@[^@\s,<>\"()\[\];:\\]+\.[^@\s,<>\"()\[\];:\\.]+")
"""One plain address, ``alice@example.com``: a local part, ``@``, a domain with a dot; no display
name, quotes, spaces or commas (the same shape an ``email:`` approver has)."""

ADDRESS_RULE = "a plain email address like alice@example.com"
"""What an address must be, in words."""

SMTP_PORTS = {"smtp": 25, "smtps": 465}
"""The port of each scheme when the URL names none (``smtp://...?starttls=true`` too uses 25:
name 587 for a provider's submission port)."""

Security = Literal["none", "starttls", "tls"]
"""How the connection is protected: not at all, upgraded with STARTTLS, or TLS from the start."""


def split_addresses(text: str) -> list[str]:
    """``a@x.org, b@y.org`` -> ``["a@x.org", "b@y.org"]`` (blank entries dropped)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def address_mistake(text: str) -> str | None:
    """Why ``text`` is not a comma-separated list of one or more distinct addresses, or ``None``."""
    addresses = split_addresses(text)
    if not addresses:
        return "must name at least one email address (comma-separated)"
    for address in addresses:
        if not ADDRESS.fullmatch(address):
            return f"{address[:80]!r} is not {ADDRESS_RULE}"
    seen: set[str] = set()
    for address in addresses:
        if address.lower() in seen:
            return f"{address[:80]!r} is listed twice"
        seen.add(address.lower())
    return None


@dataclass(frozen=True, slots=True)
class SmtpServer:
    """An SMTP server as ``HUMANGATE_SMTP_URL`` names it."""

    host: str
    port: int
    security: Security
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    """Never logged nor shown (``repr`` leaves it out)."""

    def describe(self) -> str:
        """``smtp.example.com:587 (STARTTLS, as postmaster)``: where it is, without the password."""
        how = {"none": "no TLS", "starttls": "STARTTLS", "tls": "TLS"}[self.security]
        who = f", as {self.username}" if self.username else ""
        return f"{self.host}:{self.port} ({how}{who})"


def parse_smtp_url(url: str) -> SmtpServer:
    """The server of ``smtp://[user:password@]host[:port][?starttls=true]`` or ``smtps://...``.

    Raises ``ValueError`` naming ``HUMANGATE_SMTP_URL`` and the rule; the message never repeats the
    URL (it may carry a password)."""
    where = "HUMANGATE_SMTP_URL"
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ValueError(f"{where} is not a URL with a valid port (like smtp://relay.local:25)") from None
    scheme = parts.scheme.lower()
    if scheme not in SMTP_PORTS:
        raise ValueError(f"{where} must start with smtp:// or smtps:// (got {scheme or 'no'} scheme)")
    if not parts.hostname:
        raise ValueError(f"{where} must name the server's host (smtp://host:port)")
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError(f"{where} must be the server alone: no path or fragment")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"starttls"})
    if unknown:
        raise ValueError(f"{where}: unknown option {unknown[0]!r}; the one option is starttls=true")
    starttls = [value.lower() for value in query.get("starttls", [])]
    if starttls and starttls[-1] not in ("true", "false"):
        raise ValueError(f"{where}: starttls must be true or false")
    upgrade = bool(starttls) and starttls[-1] == "true"
    if upgrade and scheme == "smtps":
        raise ValueError(f"{where}: smtps:// is TLS from the start; starttls=true goes with smtp:// only")
    if parts.password is not None and not parts.username:
        raise ValueError(f"{where}: a password needs a user (smtp://user:password@host)")
    security: Security = "tls" if scheme == "smtps" else "starttls" if upgrade else "none"
    return SmtpServer(
        host=parts.hostname,
        port=port or SMTP_PORTS[scheme],
        security=security,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
    )
