"""Logging set-up: form tokens are capabilities, so no log line may contain one."""

from __future__ import annotations

import logging
import re

TOKEN_IN_PATH = re.compile(r"(/f/[0-9a-f]+)\.[A-Za-z0-9_-]+")
"""A form path ``/f/<id>.<secret>``; the id may be logged, the secret never."""

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def redact(text: str) -> str:
    """``/f/<id>.<secret>`` -> ``/f/<id>.<redacted>``."""
    return TOKEN_IN_PATH.sub(r"\1.<redacted>", text)


class RedactTokens(logging.Filter):
    """Rewrites records (uvicorn's access log included) so form secrets never reach a handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
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
