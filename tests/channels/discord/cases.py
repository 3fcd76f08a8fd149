"""Human Functions and schemas the pure Discord tests share: one property of every kind of docs/schemas.md."""

from __future__ import annotations

from typing import Any

from channels.base import RenderContext
from schemas.models import Action, HumanFunction, Outcome, Status

HF_ID = "0123456789abcdef"
CREATED = 1_800_000_000.0
CTX = RenderContext(form_url=f"https://gate.example/f/{HF_ID}.secret", now=CREATED)

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}

PROPERTIES: dict[str, dict[str, Any]] = {
    "name": {
        "type": "string",
        "title": "Name",
        "description": "As on your badge",
        "minLength": 2,
        "maxLength": 40,
    },
    "email": {"type": "string", "format": "email"},
    "site": {"type": "string", "format": "uri"},
    "day": {"type": "string", "format": "date", "default": "2026-11-22"},
    "at": {"type": "string", "format": "date-time"},
    "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "notes": {"type": "string"},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
    "age": {"type": "integer", "minimum": 18, "maximum": 120, "default": 30},
    "agree": {"type": "boolean"},
    "subscribe": {"type": "boolean", "default": True},
    "size": {"type": "string", "enum": ["s", "m", "l"]},
    "env": {
        "type": "string",
        "enum": ["dev", "prod"],
        "enumNames": ["Development", "Production"],
        "default": "prod",
    },
    "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
    "only": {"type": "string", "enum": ["one"]},
    "many": {"type": "string", "enum": [f"v{i}" for i in range(12)]},
    "tags": {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b", "c"]},
        "minItems": 1,
        "maxItems": 2,
    },
    "pets": {
        "type": "array",
        "items": {"anyOf": [{"const": "cat", "title": "Cat"}, {"const": "dog", "title": "Dog"}]},
        "default": ["dog"],
    },
    "wide": {
        "type": "array",
        "items": {"type": "string", "enum": [f"w{i}" for i in range(15)]},
        "maxItems": 4,
    },
}
"""One property of every kind and option the flat schemas allow."""

REQUIRED = ["name", "email", "age", "agree", "size", "colour", "tags"]


def schema_of(*names: str, required: list[str] | None = None) -> dict[str, Any]:
    """A schema with the named properties of ``PROPERTIES`` (all of them by default)."""
    chosen = names or tuple(PROPERTIES)
    wanted = REQUIRED if required is None else required
    return {
        "type": "object",
        "properties": {name: PROPERTIES[name] for name in chosen},
        "required": [name for name in wanted if name in chosen],
    }


def hf_of(schema: dict[str, Any], message: str = "Please answer", **changes: Any) -> HumanFunction:
    hf = HumanFunction(
        id=HF_ID,
        requester="ci-bot",
        channel="discord",
        message=message,
        request_schema=schema,
        created_at=CREATED,
        deadline=CREATED + 180,
        form_secret="secret",
    )
    return hf.model_copy(update=changes)


def ended(hf: HumanFunction, status: Status, **outcome: Any) -> HumanFunction:
    action = {Status.ACCEPTED: Action.ACCEPT, Status.DECLINED: Action.DECLINE}.get(status, Action.CANCEL)
    fields: dict[str, Any] = {
        "status": status,
        "action": action,
        "via": "discord",
        "at": CREATED + 60,
    } | outcome
    return hf.model_copy(update={"status": status, "outcome": Outcome(**fields)})


def interaction(
    data: dict[str, Any], *, user_id: str = "111", name: str = "Ada", roles: list[str] | None = None
) -> dict[str, Any]:
    """The parts of a Discord interaction that parsing reads."""
    return {
        "type": 5 if "components" in data else 3,
        "data": data,
        "member": {
            "user": {"id": user_id, "username": name.lower(), "global_name": name},
            "roles": roles or [],
        },
    }
