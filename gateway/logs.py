"""Logging set-up: form tokens are capabilities, so no log line may contain one.

Redaction does not trust a path to be well-formed: whatever follows ``/f/`` (any case, up to the
end of the URL path) keeps at most the id's first 16 hex digits, and the rest, from the separator
on, becomes ``<redacted>``. So ``/f/<ID UPPER-CASED>.<secret>``, ``/f/<id>%2E<secret>`` or a link
whose dot was lost all lose their secret, while a well-formed link still logs its id.
"""

from __future__ import annotations

import logging
import re

FORM_PATH = re.compile(r"(/f/)([^\s?#\"'<>]+)", re.IGNORECASE)
"""``/f/`` and the rest of that URL path, up to a query, fragment, quote or whitespace."""

LOGGED_ID = re.compile(r"[0-9a-f]{0,16}", re.IGNORECASE)
"""The part of a form path that may be logged: at most an id's 16 hex digits."""

CALLBACK_QUERY = re.compile(r"(/auth/callback\?)[^\s#\"'<>]+", re.IGNORECASE)
"""The query of a web sign-in's return from the provider: its one-time ``code`` and ``state``."""

REDACTED = "<redacted>"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _redact_path(match: re.Match[str]) -> str:
    rest = match.group(2)
    kept = LOGGED_ID.match(rest)
    shown = kept.group() if kept else ""
    already = rest == f"{shown}." and match.string.startswith(REDACTED, match.end())
    if len(shown) == len(rest) or already:
        return match.group()
    return f"{match.group(1)}{shown}.{REDACTED}"


def redact(text: str) -> str:
    """``/f/<id>.<secret>`` -> ``/f/<id>.<redacted>``, for any shape of what follows ``/f/``; and
    ``/auth/callback?<code and state>`` -> ``/auth/callback?<redacted>``."""
    return CALLBACK_QUERY.sub(rf"\g<1>{REDACTED}", FORM_PATH.sub(_redact_path, text))


class RedactTokens(logging.Filter):
    """Rewrites records (uvicorn's access log included) so form secrets never reach a handler.

    The message is formatted with its arguments before it is redacted, so a token split between
    the two (``"/f/%s", token``) is caught too; a traceback's text is redacted as well.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a broken format: let the handler report it as usual
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def configure_logging(level: int = logging.INFO) -> None:
    """Root logging for humangate processes, with the redacting filter on every handler."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
    install_redaction()


def install_redaction() -> None:
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactTokens())
    for name in ("uvicorn.access", "uvicorn.error", "uvicorn"):
        logging.getLogger(name).addFilter(RedactTokens())
