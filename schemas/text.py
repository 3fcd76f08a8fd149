"""Text from callers must be valid Unicode before anything measures, stores or shows it.

JSON lets a lone surrogate through (``"\\ud800"`` decodes to a Python string no UTF-8 encoder takes),
so the message and schema of a request are checked here, and errors that quote a caller's text are
made safe to send (``valid_text``).
"""

from __future__ import annotations

from collections.abc import Mapping

from schemas.errors import InvalidRequestError

INVALID_TEXT = "must be valid Unicode text (it holds a lone surrogate)"
"""The rule broken by a string with a lone surrogate, for errors that name the field."""


def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def utf8_size(field: str, text: str) -> int:
    """The size of ``text`` in UTF-8; ``InvalidRequestError`` naming ``field`` if it is not valid."""
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:
        rule = f"must be valid Unicode text (a lone surrogate at position {exc.start})"
        raise InvalidRequestError(f"{field}: {rule}") from None


def invalid_text_path(value: object, path: str = "") -> str | None:
    """The dotted path of the first key or string in a JSON value with a lone surrogate, else None.
    Keys in the path are made valid (``valid_text``), so the path itself can be shown."""
    if isinstance(value, str):
        return path if has_lone_surrogate(value) else None
    children: list[tuple[str, object]] = []
    if isinstance(value, Mapping):
        for key, child in value.items():
            name = valid_text(str(key))
            where = f"{path}.{name}" if path else name
            if has_lone_surrogate(str(key)):
                return where
            children.append((where, child))
    elif isinstance(value, list):
        children = [(f"{path}.{index}" if path else str(index), child) for index, child in enumerate(value)]
    for where, child in children:
        found = invalid_text_path(child, where)
        if found is not None:
            return found
    return None


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it can be encoded and sent."""
    if not has_lone_surrogate(text):
        return text
    return "".join("\ufffd" if 0xD800 <= ord(char) <= 0xDFFF else char for char in text)
