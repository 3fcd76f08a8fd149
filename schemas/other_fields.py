"""The "Other" answer of a select: one more option, ``OTHER``, and a text property beside the select
for the person's own words (``ask_user_question`` offers one for every question).

A person who chooses Other writes their answer in the text; one who does not leaves the text empty.
A flat schema cannot tie two properties together (docs/schemas.md allows no combinators beyond option lists),
so the text is optional in the schema and a request carries its pairs beside it
(``HumanFunction.other_fields``); every accepted answer, whichever channel it came through, is checked
against them after the schema itself, the text field named, so the person fixes it where they
answered. Both mistakes can be fixed on every platform (a radio button cannot be cleared in Slack,
but it can always be moved to Other; a text can always be emptied).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schemas.errors import InvalidAnswerError
from schemas.flat import is_required, kind_of, options_of

OTHER = "hg:other"
"""The value of the Other option (titles are what people see; values only travel in answers)."""

OTHER_TITLE = "Other (write your own answer)"
"""How the Other option is shown."""

OTHER_WITHOUT_TEXT = "write your own answer here, or choose one of the options"
"""The reason given on the text when Other was chosen and nothing written."""

TEXT_WITHOUT_OTHER = "choose Other to send your own answer, or leave this empty"
"""The reason given on the text when something was written but Other not chosen."""


def typed_text(value: object) -> str | None:
    """What a person typed as their own answer, verbatim; ``None`` when it is blank or absent."""
    return value if isinstance(value, str) and value.strip() else None


def chose_other(value: object) -> bool:
    """Whether a select's answer (one value or a list) is, or includes, Other."""
    return value == OTHER or (isinstance(value, list) and OTHER in value)


def check_other_fields(pairs: Mapping[str, str], content: Mapping[str, Any]) -> None:
    """Raise ``InvalidAnswerError`` naming the text of each pair where Other was chosen without
    words, or words were written without choosing Other. ``content`` has passed ``validate_answer``."""
    errors: dict[str, str] = {}
    for select, text in pairs.items():
        other, typed = chose_other(content.get(select)), typed_text(content.get(text)) is not None
        if other and not typed:
            errors[text] = OTHER_WITHOUT_TEXT
        elif typed and not other:
            errors[text] = TEXT_WITHOUT_OTHER
    if errors:
        raise InvalidAnswerError(errors)


def check_pairs(schema: Mapping[str, Any], pairs: Mapping[str, str]) -> None:
    """Raise ``ValueError`` unless every pair is a select of ``schema`` offering ``OTHER`` and an
    optional text (the tools build both; this keeps a mistake from reaching a person)."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for select, text in pairs.items():
        prop = properties.get(select)
        if prop is None or OTHER not in (option.value for option in options_of(prop)):
            raise ValueError(f"other_fields: {select!r} is not a select of the schema with an Other option")
        if text not in properties or kind_of(properties[text]) != "string" or is_required(schema, text):
            raise ValueError(f"other_fields: {text!r} is not an optional text of the schema")
