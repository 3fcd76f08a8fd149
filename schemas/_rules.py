"""Per-property rules of the flat-schema checker (docs/schemas.md); private to ``schemas.flat``.

Every check appends ``Violation``s to ``out`` instead of raising, so the caller sees all of them at
once, and every check tolerates any JSON type in any place (a wrong type is a violation too).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import regex

from schemas.errors import Violation
from schemas.patterns import pattern_problem

TYPES = ("string", "number", "integer", "boolean", "array")
"""The property types a flat schema may use (``array`` only as a multi-select)."""

FORMATS = ("email", "uri", "date", "date-time")
"""The string formats MCP elicitation allows; humangate checks each of them in answers."""

_COMMON = frozenset({"type", "title", "description", "default"})
ALLOWED = {
    "string": _COMMON | {"minLength", "maxLength", "format", "pattern"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "single_select": _COMMON | {"enum", "enumNames", "oneOf"},
    "multi_select": _COMMON | {"items", "minItems", "maxItems"},
}
"""The keywords each kind of property may carry."""

_KNOWN = frozenset().union(*ALLOWED.values())
_KIND_WORDS = {"single_select": "single-select", "multi_select": "multi-select"}
ARRAY_RULE = "arrays are only allowed as multi-selects (items with enum or anyOf)"


def json_type(value: object) -> str:
    """Name a value's JSON type for a message: ``a string``, ``a list``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def shown(value: object) -> str:
    """A string quoted, any other value by its JSON type: ``"phone"``, ``a list``."""
    return f'"{value}"' if isinstance(value, str) else json_type(value)


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)  # type: ignore[arg-type]


def is_whole(value: object) -> bool:
    return is_int(value) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def check_property(path: str, prop: object, max_options: int, out: list[Violation]) -> None:
    """Check one property at ``path`` (``properties.<name>``)."""
    if not isinstance(prop, Mapping):
        out.append(Violation(path, f"must be an object (got {json_type(prop)})"))
        return
    if prop.get("type") == "object" or "properties" in prop:
        out.append(Violation(path, "nested objects are not allowed"))
        return
    if prop.get("type") == "array" and not _is_select_items(prop.get("items")):
        out.append(Violation(path, ARRAY_RULE))
        return
    unknown = [key for key in prop if key not in _KNOWN]
    out.extend(Violation(path, f'unknown keyword "{key}"') for key in unknown)
    kind = _classify(path, prop, out, quiet=bool(unknown))
    if kind is None:
        return
    word = _KIND_WORDS.get(kind, kind)
    out.extend(
        Violation(path, f'"{key}" is not allowed on a {word} property')
        for key in prop
        if key in _KNOWN and key not in ALLOWED[kind]
    )
    for key in ("title", "description"):
        if key in prop and not isinstance(prop[key], str):
            out.append(Violation(f"{path}.{key}", f"must be a string (got {json_type(prop[key])})"))
    options: list[str] = []
    if kind == "string":
        _check_string(path, prop, out)
    elif kind in ("number", "integer"):
        _check_bounds(path, prop, "minimum", "maximum", kind == "integer", out)
    elif kind == "single_select":
        options = _check_single_select(path, prop, max_options, out)
    elif kind == "multi_select":
        options = _check_multi_select(path, prop, max_options, out)
    if "default" in prop:
        _check_default(f"{path}.default", kind, prop, options, out)


def _is_select_items(items: object) -> bool:
    return isinstance(items, Mapping) and ("enum" in items or "anyOf" in items)


def _classify(path: str, prop: Mapping[str, Any], out: list[Violation], *, quiet: bool) -> str | None:
    kind = prop.get("type")
    if kind is None:
        if not quiet:  # an unknown keyword ($ref, allOf...) already says what is wrong
            out.append(Violation(f"{path}.type", f"is required (one of: {', '.join(TYPES)})"))
        return None
    if kind not in TYPES:
        out.append(
            Violation(f"{path}.type", f"unknown type {shown(kind)} (expected one of: {', '.join(TYPES)})")
        )
        return None
    if kind == "array":
        return "multi_select"
    if kind == "string" and ("enum" in prop or "oneOf" in prop):
        return "single_select"
    return str(kind)


def _check_string(path: str, prop: Mapping[str, Any], out: list[Violation]) -> None:
    _check_bounds(path, prop, "minLength", "maxLength", True, out, non_negative=True)
    fmt = prop.get("format")
    if "format" in prop and fmt not in FORMATS:
        out.append(Violation(f"{path}.format", f"must be one of: {', '.join(FORMATS)} (got {shown(fmt)})"))
    if "pattern" in prop:
        pattern = prop["pattern"]
        if not isinstance(pattern, str):
            out.append(Violation(f"{path}.pattern", f"must be a string (got {json_type(pattern)})"))
            return
        problem = pattern_problem(pattern)
        if problem:  # measured first: compiling an oversized pattern is itself the attack
            out.append(Violation(f"{path}.pattern", problem))
            return
        try:
            # The engine that enforces patterns in answers (schemas.answers) judges them here too, so
            # ECMA-262 forms such as named groups ``(?<y>...)`` and ``\\p{Lu}`` are accepted.
            regex.compile(pattern)
        except (regex.error, RecursionError, OverflowError) as exc:
            out.append(Violation(f"{path}.pattern", f"pattern is not a valid regular expression: {exc}"))


def _check_bounds(
    path: str,
    prop: Mapping[str, Any],
    low: str,
    high: str,
    whole: bool,
    out: list[Violation],
    *,
    non_negative: bool = False,
) -> dict[str, float]:
    """Check a pair of numeric bounds; return the well-typed ones."""
    good: dict[str, float] = {}
    for key in (low, high):
        if key not in prop:
            continue
        value = prop[key]
        if not is_number(value):
            out.append(Violation(f"{path}.{key}", f"must be a number (got {json_type(value)})"))
        elif whole and not is_whole(value):
            out.append(Violation(f"{path}.{key}", f"must be a whole number (got {value})"))
        elif non_negative and value < 0:
            out.append(Violation(f"{path}.{key}", f"must not be negative (got {value})"))
        else:
            good[key] = value
    if low in good and high in good and good[low] > good[high]:
        out.append(
            Violation(f"{path}.{low}", f"must not be greater than {high} ({good[low]} > {good[high]})")
        )
    return good


def _check_single_select(
    path: str, prop: Mapping[str, Any], max_options: int, out: list[Violation]
) -> list[str]:
    if "enum" in prop and "oneOf" in prop:
        out.append(Violation(path, "use either enum or oneOf, not both"))
        return []
    if "oneOf" in prop:
        if "enumNames" in prop:
            out.append(Violation(f"{path}.enumNames", "is only allowed with enum"))
        return _check_titled(f"{path}.oneOf", prop["oneOf"], max_options, out)
    values = _check_enum(f"{path}.enum", prop["enum"], max_options, out)
    if "enumNames" in prop:
        names = prop["enumNames"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            out.append(Violation(f"{path}.enumNames", "must be a list of strings"))
        elif isinstance(prop["enum"], list) and len(names) != len(prop["enum"]):
            count = len(prop["enum"])
            out.append(
                Violation(
                    f"{path}.enumNames", f"must have one name per enum value ({count}, got {len(names)})"
                )
            )
    return values


def _check_multi_select(
    path: str, prop: Mapping[str, Any], max_options: int, out: list[Violation]
) -> list[str]:
    items: Mapping[str, Any] = prop["items"]  # _is_select_items made sure it is a mapping
    ipath = f"{path}.items"
    out.extend(
        Violation(ipath, f'unknown keyword "{key}"') for key in items if key not in ("type", "enum", "anyOf")
    )
    if "type" in items and items["type"] != "string":
        out.append(Violation(f"{ipath}.type", f'must be "string" (got {shown(items["type"])})'))
    if "enum" in items and "anyOf" in items:
        out.append(Violation(ipath, "use either enum or anyOf, not both"))
        return []
    if "enum" in items:
        if "type" not in items:
            out.append(Violation(f"{ipath}.type", 'is required ("string") with enum'))
        values = _check_enum(f"{ipath}.enum", items["enum"], max_options, out)
    else:
        values = _check_titled(f"{ipath}.anyOf", items["anyOf"], max_options, out)
    bounds = _check_bounds(path, prop, "minItems", "maxItems", True, out, non_negative=True)
    if values and bounds.get("minItems", 0) > len(values):
        out.append(Violation(f"{path}.minItems", f"must be at most {len(values)} (the number of options)"))
    return values


def _check_enum(path: str, enum: object, max_options: int, out: list[Violation]) -> list[str]:
    if not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum):
        out.append(Violation(path, "must be a non-empty list of strings"))
        return []
    _check_options(path, enum, max_options, out)
    return enum


def _check_titled(path: str, options: object, max_options: int, out: list[Violation]) -> list[str]:
    if not isinstance(options, list) or not options:
        out.append(Violation(path, 'must be a non-empty list of {"const", "title"} objects'))
        return []
    values: list[str] = []
    for index, option in enumerate(options):
        opath = f"{path}.{index}"
        if not isinstance(option, Mapping):
            out.append(Violation(opath, f'must be a {{"const", "title"}} object (got {json_type(option)})'))
            continue
        out.extend(
            Violation(opath, f'unknown keyword "{key}"') for key in option if key not in ("const", "title")
        )
        for key in ("const", "title"):
            if not isinstance(option.get(key), str):
                rule = (
                    "is required" if key not in option else f"must be a string (got {json_type(option[key])})"
                )
                out.append(Violation(f"{opath}.{key}", rule))
        if isinstance(option.get("const"), str):
            values.append(option["const"])
    _check_options(path, values, max_options, out)
    return values


def _check_options(path: str, values: list[str], max_options: int, out: list[Violation]) -> None:
    if len(values) > max_options:
        out.append(Violation(path, f"must be at most {max_options} options (got {len(values)})"))
    repeated = [value for value, count in Counter(values).items() if count > 1]
    if repeated:
        out.append(Violation(path, "values must be unique (repeated: " + ", ".join(repeated) + ")"))


def _check_default(
    path: str, kind: str, prop: Mapping[str, Any], options: list[str], out: list[Violation]
) -> None:
    default = prop["default"]
    if kind in ("string", "single_select") and not isinstance(default, str):
        out.append(Violation(path, f"must be a string (got {json_type(default)})"))
    elif kind == "single_select" and options and default not in options:
        out.append(Violation(path, f'must be one of the options (got "{default}")'))
    elif kind == "number" and not is_number(default):
        out.append(Violation(path, f"must be a number (got {json_type(default)})"))
    elif kind == "integer" and not is_whole(default):
        out.append(Violation(path, f"must be a whole number (got {default!r})"))
    elif kind == "boolean" and not isinstance(default, bool):
        out.append(Violation(path, f"must be true or false (got {json_type(default)})"))
    elif kind == "multi_select":
        if not isinstance(default, list) or not all(isinstance(v, str) for v in default):
            out.append(Violation(path, "must be a list of options"))
        elif options and (stray := [v for v in default if v not in options]):
            out.append(Violation(path, "must only contain options (not: " + ", ".join(stray) + ")"))
