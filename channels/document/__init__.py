"""Agent text as Markdown, parsed once into a document model that every channel renders natively."""

from channels.document.model import Document
from channels.document.parse import parse
from schemas.settings import get_settings


def document_of(text: str) -> Document:
    """``text`` as the person reading it sees it: parsed as Markdown, or as written under
    ``HUMANGATE_MESSAGE_FORMAT=plain``. Parsed once per process for the same text."""
    return parse(text, markdown=get_settings().message_format == "markdown")
