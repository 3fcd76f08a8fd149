"""What Teams would refuse in an Adaptive Card: a checker of the 1.5 schema's elements and properties
(plus Teams' own ``CodeBlock``, which Teams documents for cards with a ``fallback`` for other hosts).

The fake Bot Connector runs every posted or edited card through ``card_problems``, so a rendering
that uses an element or property Adaptive Cards 1.5 does not have, a misspelt property, an input
without an id, or an ``Action.Execute`` without a verb fails the end-to-end tests too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_COMMON = {"type", "id", "isVisible", "separator", "spacing", "height", "requires", "fallback"}
_INPUT = _COMMON | {"label", "isRequired", "errorMessage", "value", "placeholder"}
_TEXT_STYLE = {"color", "fontType", "isSubtle", "size", "weight", "highlight", "italic", "strikethrough"}
ELEMENTS: dict[str, set[str]] = {
    "TextBlock": _COMMON
    | _TEXT_STYLE - {"highlight", "italic", "strikethrough"}
    | {"text", "wrap", "maxLines", "horizontalAlignment", "style"},
    "RichTextBlock": _COMMON | {"inlines", "horizontalAlignment"},
    "Container": _COMMON
    | {
        "items",
        "style",
        "bleed",
        "minHeight",
        "selectAction",
        "rtl",
        "verticalContentAlignment",
        "backgroundImage",
    },
    "ColumnSet": _COMMON | {"columns", "style", "bleed", "minHeight", "selectAction", "horizontalAlignment"},
    "Column": _COMMON - {"height"}
    | {"items", "width", "style", "bleed", "minHeight", "selectAction", "verticalContentAlignment"},
    "Table": _COMMON
    | {
        "columns",
        "rows",
        "firstRowAsHeader",
        "showGridLines",
        "gridStyle",
        "horizontalCellContentAlignment",
        "verticalCellContentAlignment",
    },
    "TableRow": {"type", "cells", "style", "horizontalCellContentAlignment", "verticalCellContentAlignment"},
    "TableCell": {"type", "items", "style", "selectAction", "verticalContentAlignment", "bleed", "minHeight"},
    "CodeBlock": _COMMON | {"codeSnippet", "language", "startLineNumber"},
    "FactSet": _COMMON | {"facts"},
    "ActionSet": _COMMON | {"actions"},
    "Input.Text": _INPUT | {"isMultiline", "maxLength", "style", "inlineAction", "regex"},
    "Input.Number": _INPUT | {"min", "max"},
    "Input.Date": _INPUT | {"min", "max"},
    "Input.Time": _INPUT | {"min", "max"},
    "Input.Toggle": _INPUT - {"placeholder"} | {"title", "valueOn", "valueOff", "wrap"},
    "Input.ChoiceSet": _INPUT | {"choices", "isMultiSelect", "style", "wrap"},
}
"""Card elements of Adaptive Cards 1.5 that humangate may use, with their properties."""

_ACTION = {"type", "id", "title", "iconUrl", "style", "fallback", "tooltip", "isEnabled", "mode", "requires"}
ACTIONS: dict[str, set[str]] = {
    "Action.OpenUrl": _ACTION | {"url"},
    "Action.Submit": _ACTION | {"data", "associatedInputs"},
    "Action.Execute": _ACTION | {"verb", "data", "associatedInputs"},
    "Action.ShowCard": _ACTION | {"card"},
}
CARD = {
    "type",
    "$schema",
    "version",
    "body",
    "actions",
    "msteams",
    "refresh",
    "fallbackText",
    "speak",
    "lang",
    "minHeight",
    "rtl",
    "verticalContentAlignment",
    "selectAction",
    "backgroundImage",
}
TEXT_RUN = {"type", "text"} | _TEXT_STYLE | {"selectAction", "underline"}
MAX_ACTIONS = 6
"""Top-level actions Teams shows on one card."""


def card_problems(card: Mapping[str, Any]) -> list[str]:
    """Everything in ``card`` that Adaptive Cards 1.5 (as Teams renders it) would not accept."""
    problems: list[str] = []
    if card.get("type") != "AdaptiveCard" or card.get("version") != "1.5":
        problems.append("the card must be an AdaptiveCard of version 1.5")
    problems += [f"card: unknown property {key}" for key in card if key not in CARD]
    ids: list[str] = []
    for element in card.get("body") or []:
        _element(element, problems, ids)
    actions = card.get("actions") or []
    if len(actions) > MAX_ACTIONS:
        problems.append(f"at most {MAX_ACTIONS} actions")
    for action in actions:
        _action(action, problems, ids)
    refresh = card.get("refresh")
    if refresh is not None:
        action = refresh.get("action") or {}
        if action.get("type") != "Action.Execute" or not isinstance(refresh.get("userIds", []), list):
            problems.append("refresh needs an Action.Execute and a userIds list")
    if len(ids) != len(set(ids)):
        problems.append(f"input ids must be unique: {ids}")
    return problems


def _element(element: Mapping[str, Any], problems: list[str], ids: list[str]) -> None:
    kind: Any = element.get("type")  # any JSON value; a known one from here on
    allowed = ELEMENTS.get(str(kind))
    if allowed is None:
        problems.append(f"unknown element type {kind!r}")
        return
    problems += [f"{kind}: unknown property {key}" for key in element if key not in allowed]
    if kind.startswith("Input."):
        if not isinstance(element.get("id"), str) or not element["id"]:
            problems.append(f"{kind} needs an id")
        else:
            ids.append(element["id"])
        if not isinstance(element.get("label"), str):
            problems.append(f"{kind} {element.get('id')} needs a label")
    if kind == "Input.ChoiceSet":
        for choice in element.get("choices") or []:
            if set(choice) != {"title", "value"} or not all(isinstance(v, str) for v in choice.values()):
                problems.append("a choice is {title, value} strings")
    if kind == "Input.Toggle" and not isinstance(element.get("title"), str):
        problems.append("Input.Toggle needs a title")
    if kind == "RichTextBlock":
        for inline in element.get("inlines") or []:
            if not isinstance(inline, Mapping) or inline.get("type") != "TextRun":
                problems.append("RichTextBlock inlines are TextRuns")
            else:
                problems += [f"TextRun: unknown property {key}" for key in inline if key not in TEXT_RUN]
    if kind == "ColumnSet":
        for column in element.get("columns") or []:
            if not isinstance(column, Mapping) or column.get("type") != "Column":
                problems.append("ColumnSet columns are Columns")
            else:
                _element(column, problems, ids)
    if kind == "Table":
        problems += _table_problems(element, problems, ids)
    if kind == "CodeBlock":
        if not isinstance(element.get("codeSnippet"), str) or element.get("language") not in CODE_LANGUAGES:
            problems.append(
                f"CodeBlock needs a codeSnippet and one of Teams' languages, not {element.get('language')!r}"
            )
    fallback = element.get("fallback")
    if isinstance(fallback, Mapping):
        _element(fallback, problems, ids)
    for child in element.get("items") or []:
        _element(child, problems, ids)
    for action in element.get("actions") or []:
        _action(action, problems, ids)


CODE_LANGUAGES = {
    "Bash", "C", "C++", "C#", "CSS", "DOS", "Go", "GraphQL", "HTML", "Java", "JavaScript", "JSON", "Perl",
    "PHP", "PlainText", "PowerShell", "Python", "SQL", "TypeScript", "Visual Basic", "Verilog", "VHDL", "XML",
}  # fmt: skip
"""The languages Teams' CodeBlock highlights."""


def _table_problems(table: Mapping[str, Any], problems: list[str], ids: list[str]) -> list[str]:
    found: list[str] = []
    columns = table.get("columns") or []
    if not all(isinstance(column, Mapping) and "width" in column for column in columns):
        found.append("Table columns each have a width")
    for row in table.get("rows") or []:
        if not isinstance(row, Mapping) or row.get("type") != "TableRow":
            found.append("Table rows are TableRows")
            continue
        cells = row.get("cells") or []
        if len(cells) > len(columns):
            found.append("a TableRow has more cells than the Table has columns")
        for cell in cells:
            if not isinstance(cell, Mapping) or cell.get("type") != "TableCell":
                found.append("TableRow cells are TableCells")
            else:
                _element(cell, problems, ids)
    return found


def _action(action: Mapping[str, Any], problems: list[str], ids: list[str]) -> None:
    kind = action.get("type")
    allowed = ACTIONS.get(str(kind))
    if allowed is None:
        problems.append(f"unknown action type {kind!r}")
        return
    problems += [f"{kind}: unknown property {key}" for key in action if key not in allowed]
    if kind == "Action.Execute" and not action.get("verb"):
        problems.append("Action.Execute needs a verb")
    if action.get("associatedInputs", "auto") not in ("auto", "none"):
        problems.append("associatedInputs is auto or none")
    fallback = action.get("fallback")
    if isinstance(fallback, Mapping):
        _action(fallback, problems, ids)
    if kind == "Action.ShowCard":
        problems += card_problems(action.get("card") or {})
