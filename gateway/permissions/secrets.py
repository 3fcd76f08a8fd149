"""Values that look like secrets, masked in what people see and in the audit (docs/permissions.md#secrets).

The agent gets its input back unchanged: only the text shown to people is masked. Each pattern keeps
the part that says what the value is (``AKIA``, ``ghp_``, ``Bearer``, a URL's user) and replaces the
rest, so a person still knows what the command does with it.
"""

from __future__ import annotations

import re

MASK = "\u2022" * 8
"""What a secret's hidden part is shown as."""

_KEEP_PREFIX: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",  # AWS access key ids
        r"\b(gh[pousr]_)[A-Za-z0-9]{30,}\b",  # GitHub tokens
        r"\b(github_pat_)[A-Za-z0-9_]{20,}",
        r"\b(glpat-)[A-Za-z0-9_-]{20,}",  # GitLab
        r"\b(xox[abposr]-)[A-Za-z0-9-]{10,}",  # Slack bot, user, app tokens
        r"\b(xapp-)[A-Za-z0-9-]{10,}",
        r"\b(sk-ant-|sk-proj-|sk-)[A-Za-z0-9_-]{20,}",  # Anthropic, OpenAI
        r"\b((?:sk|rk|pk)_(?:live|test)_)[A-Za-z0-9]{16,}",  # Stripe
        r"\b(AIza)[0-9A-Za-z_-]{35}\b",  # Google API keys
        r"\b(\d{6,12}:)[A-Za-z0-9_-]{35}\b",  # Telegram bot tokens
        r"\b(eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWTs
        r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}",  # Authorization: Bearer ...
        r"(?i)\b(basic\s+)[A-Za-z0-9+/=]{8,}",
        r"(?i)(\b[a-z][a-z0-9+.-]{0,15}://[^/\s:@]{1,256}:)[^@\s/]{1,256}(?=@)",  # a password in a URL
        # password=..., API_KEY: ..., "secret": "..." (a value not masked already)
        r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret)"
        r"[\w-]{0,32}[\"']?[ \t]{0,8}[=:][ \t]{0,8}[\"']?)(?![^\s\"']{0,64}\u2022)[^\s\"'&;,]{4,}",
        # --password value, --token=value
        r"(?i)(--?(?:password|passwd|token|secret|api[_-]?key|auth[_-]?token)(?:\s+|=))(?!\u2022)[^\s\"']{4,}",
    )
)

_PRIVATE_KEY = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)"
)

_AWS_SECRET = re.compile(r"(?i)(aws_secret_access_key[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{20,}")


def mask(text: str) -> str:
    """``text`` with every value that looks like a secret masked."""
    text = _PRIVATE_KEY.sub(lambda m: f"{m.group(1)}\n{MASK}\n{m.group(2) or ''}".rstrip(), text)
    text = _AWS_SECRET.sub(lambda m: m.group(1) + MASK, text)
    for pattern in _KEEP_PREFIX:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text
