"""``ask_user_question``: Claude Code's AskUserQuestion format, answered as a Human Function
(docs/tools.md#ask_user_question).

One to four questions become one flat schema, two properties per question:

- ``q<n>`` (required): the options plus Other (``schemas.other_fields.OTHER``), a single choice
  (``oneOf``) or, with ``multiSelect``, one or more (an array with ``anyOf``); titled by the
  question's ``header`` and described by the question itself; an option's value is its ``label``
  and its title ``label — description``;
- ``q<n>_other`` (optional): the person's own answer, titled ``<header>: Other``, written when (and
  only when) they choose Other; the pairs travel beside the schema (``schemas.other_fields``).

The message (Markdown) is the question, or with several each one after its bold header, each with its
options and their descriptions as a list. An accepted answer
reads back as Claude Code's: question -> the chosen label, several labels joined by ", " in option
order (the person's own answer last), or the person's own answer verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from channels.document.source import escape_markdown
from gateway.core.waiting import ResultSource
from gateway.mcp.arguments import UI_TYPE_PROPERTY, Arguments, channel_argument, object_or_none
from gateway.mcp.call import Question
from gateway.mcp.texts import outcome_result, text_result
from schemas.errors import InvalidSchemaError
from schemas.flat import SchemaLimits, check_flat_schema, options_of
from schemas.models import Action, Outcome
from schemas.other_fields import OTHER, OTHER_TITLE, chose_other, typed_text
from schemas.results import answered_by, approvals_of, compact_json
from schemas.settings import Settings

NAME = "ask_user_question"

MAX_HEADER = 12
"""Longest ``header`` (characters), as AskUserQuestion allows."""

OPTION_DESCRIPTION = {"label": "The option's text (1-5 words)", "description": "What the option means"}

TOOL = types.Tool(
    name=NAME,
    description=(
        "Ask the user 1-4 multiple-choice questions (Claude Code's AskUserQuestion format) via Human "
        "Functions. Each question has 2-4 options and always lets the user type an 'Other' answer; "
        "with multiSelect the user may choose several. Returns the answers by question."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": 4,
                "description": "Questions to ask the user (1-4 questions)",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "description": "The complete question to ask"},
                        "header": {
                            "type": "string",
                            "maxLength": MAX_HEADER,
                            "description": "A very short label for the question (at most 12 characters)",
                        },
                        "options": {
                            "type": "array",
                            "minItems": 2,
                            "maxItems": 4,
                            "description": "The choices (2-4); an 'Other' free-text answer is always added",
                            "items": {
                                "type": "object",
                                "properties": {
                                    key: {"type": "string", "description": text}
                                    for key, text in OPTION_DESCRIPTION.items()
                                },
                                "required": ["label", "description"],
                            },
                        },
                        "multiSelect": {"type": "boolean", "description": "Allow choosing several options"},
                    },
                    "required": ["question", "header", "options", "multiSelect"],
                },
            },
            "uiType": UI_TYPE_PROPERTY,
        },
        "required": ["questions"],
    },
)


@dataclass(frozen=True, slots=True)
class AskedQuestion:
    """One question of a call, as checked."""

    question: str
    header: str
    options: list[tuple[str, str]]
    """(label, description) of each option, in order."""
    multi: bool


def parse_questions(raw: object, arguments: Arguments) -> list[AskedQuestion]:
    """The questions of a call; every broken rule is recorded in ``arguments``."""
    items = arguments.items("questions", raw, 1, 4, "questions")
    asked: list[AskedQuestion] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items or []):
        path = f"questions[{i}]"
        fields = object_or_none(arguments, path, item)
        if fields is None:
            continue
        arguments.unknown(path, fields, ("question", "header", "options", "multiSelect"))
        question = arguments.text(f"{path}.question", fields.get("question"))
        if question is not None and question in seen:
            arguments.add(f"{path}.question", f"must differ from questions[{seen[question]}].question")
        elif question is not None:
            seen[question] = i
        header = arguments.text(f"{path}.header", fields.get("header"), max_chars=MAX_HEADER)
        options = _options(fields.get("options"), f"{path}.options", arguments)
        multi = fields.get("multiSelect")
        if not isinstance(multi, bool):
            arguments.add(f"{path}.multiSelect", "is required" if multi is None else "must be true or false")
        if question is not None and header is not None and options is not None and isinstance(multi, bool):
            asked.append(AskedQuestion(question, header.strip(), options, multi))
    return asked


def _options(raw: object, path: str, arguments: Arguments) -> list[tuple[str, str]] | None:
    items = arguments.items(path, raw, 2, 4, "options")
    if items is None:
        return None
    options: list[tuple[str, str]] = []
    for k, item in enumerate(items):
        fields = object_or_none(arguments, f"{path}[{k}]", item)
        if fields is None:
            continue
        arguments.unknown(f"{path}[{k}]", fields, ("label", "description"))
        label = arguments.text(f"{path}[{k}].label", fields.get("label"))
        description = arguments.text(f"{path}[{k}].description", fields.get("description"), required=False)
        if "description" not in fields:
            arguments.add(f"{path}[{k}].description", "is required")
        if label is not None and label in (*(known for known, _ in options), OTHER):
            rule = (
                f'"{OTHER}" is reserved' if label == OTHER else "must differ from the other options' labels"
            )
            arguments.add(f"{path}[{k}].label", rule)
        elif label is not None:
            options.append((label, (description or "").strip()))
    return options if len(options) == len(items) else None


def question_schema(questions: list[AskedQuestion]) -> tuple[dict[str, Any], dict[str, str]]:
    """The flat schema of the questions, and each select's "Other" text property."""
    properties: dict[str, Any] = {}
    others: dict[str, str] = {}
    for n, asked in enumerate(questions, start=1):
        choices = [
            {"const": label, "title": f"{label} \u2014 {description}" if description else label}
            for label, description in asked.options
        ]
        choices.append({"const": OTHER, "title": OTHER_TITLE})
        select: dict[str, Any] = {"title": asked.header, "description": asked.question}
        if asked.multi:
            select |= {"type": "array", "items": {"anyOf": choices}, "minItems": 1}
        else:
            select |= {"type": "string", "oneOf": choices}
        properties[f"q{n}"] = select
        properties[f"q{n}_other"] = {
            "type": "string",
            "title": f"{asked.header}: Other",
            "description": "Your own answer, if you chose Other",
        }
        others[f"q{n}"] = f"q{n}_other"
    return {"type": "object", "properties": properties, "required": list(others)}, others


def message_of(questions: list[AskedQuestion], *, markdown: bool = True) -> str:
    """The request's message, in Markdown (docs/rendering.md): each question (after its bold header
    when there are several) and its options as a list, ``**label**: description``, so the
    descriptions a select's clipped option titles lose are read in full. With ``markdown=False``
    (``HUMANGATE_MESSAGE_FORMAT=plain``): the question, or one ``header: question`` line per question."""
    if not markdown:
        if len(questions) == 1:
            return questions[0].question
        return "\n".join(f"{asked.header}: {asked.question}" for asked in questions)
    parts = []
    for asked in questions:
        lead = (
            asked.question
            if len(questions) == 1
            else f"**{escape_markdown(asked.header)}**: {asked.question}"
        )
        options = "\n".join(
            f"- **{escape_markdown(label)}**" + (f": {description}" if description else "")
            for label, description in asked.options
        )
        parts.append(f"{lead}\n\n{options}")
    return "\n\n".join(parts)


def parse_arguments(raw: dict[str, Any] | None, settings: Settings) -> Question:
    """The question a call asks; errors name the argument and the rule."""
    args = raw or {}
    arguments = Arguments()
    arguments.unknown("", args, ("questions", "uiType"))
    questions = parse_questions(args.get("questions"), arguments)
    arguments.raise_any()
    channel = channel_argument(args, settings)
    message = message_of(questions, markdown=settings.message_format == "markdown")
    schema, others = question_schema(questions)
    if len(message.encode()) > settings.max_message_bytes:
        arguments.add("questions", f"must be at most {settings.max_message_bytes} bytes of text together")
    try:
        check_flat_schema(
            schema, SchemaLimits(settings.max_properties, settings.max_options, settings.max_schema_bytes)
        )
    except InvalidSchemaError as exc:
        arguments.add("questions", f"do not fit in one form ({'; '.join(str(v) for v in exc.violations)})")
    arguments.raise_any()
    return Question(channel, message, schema, other_fields=others)


def answers_of(hf: ResultSource, content: Mapping[str, Any]) -> dict[str, str]:
    """Question -> answer, in question order, from an accepted answer to ``hf``."""
    properties: Mapping[str, Any] = hf.request_schema.get("properties") or {}
    answers: dict[str, str] = {}
    for select, other in hf.other_fields.items():
        prop = properties[select]
        chosen = content.get(select)
        picked = chosen if isinstance(chosen, list) else [chosen] if chosen is not None else []
        order = [option.value for option in options_of(prop)]
        labels = sorted((str(v) for v in picked if v != OTHER), key=lambda label: _index(order, label))
        typed = typed_text(content.get(other)) if chose_other(chosen) else None
        answers[str(prop.get("description", select))] = ", ".join([*labels, typed] if typed else labels)
    return answers


def _index(order: list[str], label: str) -> int:
    return order.index(label) if label in order else len(order)


def result_of(outcome: Outcome, hf: ResultSource) -> types.CallToolResult:
    """``User answered: {...}`` with ``{"action", "answers", "id", "answeredBy"}``; else ``elicit``'s
    result."""
    if outcome.action is not Action.ACCEPT:
        return outcome_result(outcome, hf)
    answers = answers_of(hf, outcome.content or {})
    structured = {
        "action": outcome.action.value,
        "answers": answers,
        "id": hf.id,
        "answeredBy": answered_by(outcome),
    } | approvals_of(outcome)
    return text_result(f"User answered: {compact_json(answers)}", error=False, structured=structured)
