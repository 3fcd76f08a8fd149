"""Settings that cannot be read, in words: one line per mistake, naming the environment variable,
what is wrong with its value and the accepted form; never the value (it may be a secret), never the
validation library's own wording.

``humangate`` prints these lines and exits 2 (docs/cli.md#settings-mistakes).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from pydantic import AliasChoices, ValidationError
from pydantic.fields import FieldInfo

from schemas.setting_rules import ONE_LINE, Form, form_of
from schemas.settings import Settings

PROBLEMS = {
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "int_type": "is not a whole number",
    "float_parsing": "is not a number",
    "float_type": "is not a number",
    "bool_parsing": "is not true or false",
    "bool_type": "is not true or false",
    "literal_error": "is not one of the accepted words",
    "greater_than": "is too small",
    "greater_than_equal": "is too small",
    "less_than": "is too large",
    "less_than_equal": "is too large",
    "finite_number": "is not a finite number",
}
"""The problem each kind of validation error names; any other kind is "is not in the accepted form"."""


def env_name(name: str) -> str:
    """The environment variable a setting is read from: the platform's own name (``SLACK_BOT_TOKEN``),
    else the prefixed one (``HUMANGATE_RATE_LIMIT``)."""
    field = Settings.model_fields[name]
    if isinstance(field.validation_alias, AliasChoices):
        return str(field.validation_alias.choices[0])
    return f"{Settings.model_config.get('env_prefix', '')}{name}".upper()


def field_form(name: str) -> Form | None:
    """The ``Form`` of setting ``name``, if its text has one."""
    field = Settings.model_fields[name]
    for meta in field.metadata:
        if isinstance(meta, Form):
            return meta
    return form_of(field.annotation)


def field_name(loc: str) -> str | None:
    """The setting an error's location names (a field name, or an alias: ``SLACK_BOT_TOKEN``)."""
    for name, field in Settings.model_fields.items():
        aliases = field.validation_alias.choices if isinstance(field.validation_alias, AliasChoices) else ()
        if loc == name or loc in aliases:
            return name
    return None


def _plain(annotation: Any) -> Any:
    """The type under ``| None`` and ``Annotated``."""
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return _plain(args[0]) if len(args) == 1 else annotation
    if hasattr(annotation, "__metadata__"):
        return _plain(args[0])
    return annotation


def _bounds(field: FieldInfo) -> str:
    said = []
    for meta in field.metadata:
        for attr, words in (
            ("gt", "greater than"),
            ("ge", "at least"),
            ("lt", "less than"),
            ("le", "at most"),
        ):
            value = getattr(meta, attr, None)
            if value is not None:
                said.append(f"{words} {value:g}")
    return f" {' and '.join(said)}" if said else ""


def accepted_form(name: str) -> str:
    """The accepted form of setting ``name``, in words."""
    field = Settings.model_fields[name]
    form = field_form(name)
    if form is not None:
        return form.text
    kind = _plain(field.annotation)
    if typing.get_origin(kind) is Literal:
        return "one of " + ", ".join(str(word) for word in typing.get_args(kind))
    if kind is bool:
        return "true or false"
    if kind is int:
        return "a whole number" + _bounds(field)
    if kind is float:
        return "a number" + _bounds(field)
    if typing.get_args(kind) == (float,):
        return "positive numbers of seconds, comma-separated, like 5,300,1800"
    return ONE_LINE


def _without_name(text: str, variable: str) -> str:
    """A validator's message without the variable's name in front (the line names it first)."""
    for lead in (f"{variable}: ", f"{variable} "):
        if text.startswith(lead):
            return text[len(lead) :]
    return text


def mistake_line(error: Any) -> str:
    """One validation error of ``Settings`` as ``VARIABLE: problem; accepted: form``."""
    loc = error.get("loc") or ()
    name = field_name(str(loc[0])) if loc else None
    if error["type"] == "value_error":
        said = str(error.get("ctx", {}).get("error", "")) or error["msg"]
    else:
        said = ""
    if name is None:  # a rule between settings: its message names them all
        return said or "the settings do not fit together"
    variable = env_name(name)
    if said:
        said = _without_name(said, variable)
        if "accepted:" in said or field_form(name) is None:
            return f"{variable}: {said}"
        return f"{variable}: {said}; accepted: {accepted_form(name)}"
    problem = PROBLEMS.get(error["type"], "is not in the accepted form")
    return f"{variable}: {problem}; accepted: {accepted_form(name)}"


def mistake_lines(error: ValidationError) -> list[str]:
    """Every mistake of a failed ``Settings()``, one line each, in the order the model lists them."""
    lines: list[str] = []
    for item in error.errors(include_url=False, include_input=False):
        line = mistake_line(item)
        if line not in lines:
            lines.append(line)
    return lines
