"""Reading one Discord interaction: its signature, who clicked (their id, name and roles, as
policies name approvers), whether they may answer, and the answer a click or a modal submit gives.

Pure functions over the interaction Discord sent; ``channels.discord.channel`` (the ``Channel``) and
``channels.discord.inbound`` (the endpoint) both use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from channels.discord.components import Act, parse_custom_id
from channels.discord.modal import option_values, submitted_reason, submitted_values
from channels.display import approval_field
from schemas.answers import coerce_text_values
from schemas.errors import InvalidAnswerError, SignatureError
from schemas.flat import options_of
from schemas.models import Action, Answer, HumanFunction, Person
from schemas.settings import Settings

CHANNEL = "discord"
"""The channel's name, as answers and people name where they came from."""

SIGNATURE_MAX_AGE = 300
"""Seconds an interaction's signature timestamp may be from now, either way, before it is refused."""


def verify_interaction(public_key: str | None, headers: Mapping[str, str], body: bytes, now: float) -> None:
    """Raise ``SignatureError`` unless ``body`` is signed as Discord signs interactions and is fresh.

    Discord signs ``X-Signature-Timestamp + body`` with Ed25519 and sends the signature in hex in
    ``X-Signature-Ed25519``. ``headers`` has lower-case names.
    """
    signature, stamp = headers.get("x-signature-ed25519"), headers.get("x-signature-timestamp")
    if not public_key:
        raise SignatureError(
            "DISCORD_PUBLIC_KEY is not set, so no interaction is accepted here (interactions come "
            "over the Gateway: HUMANGATE_DISCORD_INBOUND=gateway)"
        )
    if not signature or not stamp:
        raise SignatureError("missing X-Signature-Ed25519 or X-Signature-Timestamp header")
    try:
        key = VerifyKey(bytes.fromhex(public_key or ""))
    except ValueError:
        raise SignatureError("DISCORD_PUBLIC_KEY is not a valid Ed25519 public key") from None
    try:
        raw = bytes.fromhex(signature)
        seconds = int(stamp)
    except ValueError:
        raise SignatureError("the signature or its timestamp is malformed") from None
    if len(raw) != 64:
        raise SignatureError("the signature is malformed (not 64 bytes)")
    try:
        key.verify(stamp.encode() + body, raw)
    except BadSignatureError:
        raise SignatureError("the signature does not match DISCORD_PUBLIC_KEY") from None
    if abs(now - seconds) > SIGNATURE_MAX_AGE:
        raise SignatureError(f"the signature timestamp is more than {SIGNATURE_MAX_AGE} seconds from now")


def person(interaction: Mapping[str, Any]) -> tuple[str, str, list[str]]:
    """(user id, the name people see, role ids) of whoever clicked; roles only in a server."""
    member = interaction.get("member") if isinstance(interaction.get("member"), Mapping) else None
    user = (member or {}).get("user") or interaction.get("user") or {}
    user_id = str(user.get("id", ""))
    name = (member or {}).get("nick") or user.get("global_name") or user.get("username") or "someone"
    roles = [str(role) for role in (member or {}).get("roles") or []]
    return user_id, str(name), roles


def identity(interaction: Mapping[str, Any]) -> Person | None:
    """Who clicked, as Discord's signed interaction names them; ``None`` if it names no user."""
    user_id, name, _ = person(interaction)
    return Person(channel=CHANNEL, id=user_id, name=name) if user_id else None


def held(interaction: Mapping[str, Any]) -> list[str]:
    """What the clicker holds, as policies name approvers: ``discord:user:<id>`` and a
    ``discord:role:<id>`` for each of their roles in the server (docs/policies.md#approvers)."""
    user_id, _, roles = person(interaction)
    names = [f"discord:user:{user_id}"] if user_id else []
    return names + [f"discord:role:{role}" for role in roles]


def answered_by(interaction: Mapping[str, Any]) -> str:
    """``Ada (111111111111111111)``: the name people see and the stable user id."""
    user_id, name, _ = person(interaction)
    return f"{name} ({user_id})"


def is_allowed(interaction: Mapping[str, Any], settings: Settings) -> bool:
    """Anyone may answer unless allowed users or roles are set; then one of them must match."""
    users, roles = set(settings.discord_allowed_users), set(settings.discord_allowed_roles)
    if not users and not roles:
        return True
    user_id, _, member_roles = person(interaction)
    return user_id in users or bool(roles.intersection(member_roles))


def parse_interaction(hf: HumanFunction, interaction: Mapping[str, Any]) -> Answer:
    """The answer a click or a modal submit gives, with who gave it (``identity``);
    ``InvalidAnswerError`` when it gives none."""
    return _parse(hf, interaction).model_copy(update={"person": identity(interaction)})


def _parse(hf: HumanFunction, interaction: Mapping[str, Any]) -> Answer:
    data: Mapping[str, Any] = interaction.get("data") or {}
    try:
        custom_id = parse_custom_id(str(data.get("custom_id", "")))
    except ValueError:
        raise InvalidAnswerError({"": "this component is not one of humangate's"}) from None
    by = answered_by(interaction)
    schema = hf.request_schema
    if custom_id.act is Act.APPROVE and (field := approval_field(schema)):
        return Answer(action=Action.ACCEPT, content={field: True}, by=by, via=CHANNEL)
    if custom_id.act is Act.CANCEL:
        return Answer(action=Action.CANCEL, by=by, via=CHANNEL)
    if custom_id.act is Act.REASON:
        return Answer(action=Action.DECLINE, reason=submitted_reason(data), by=by, via=CHANNEL)
    if custom_id.act in (Act.PICK, Act.CHOOSE) and len(schema.get("properties") or {}) == 1:
        name, prop = next(iter(schema["properties"].items()))
        raw = [str(custom_id.arg)] if custom_id.act is Act.PICK else data.get("values")
        chosen = option_values(options_of(prop), [str(v) for v in raw] if isinstance(raw, list) else [])
        if not chosen:
            raise InvalidAnswerError(
                {name: "must be one of: " + ", ".join(o.value for o in options_of(prop))}
            )
        return form_answer(hf, {name: chosen}, by)
    if custom_id.act is Act.FORM:
        return form_answer(hf, submitted_values(hf, data), by)
    raise InvalidAnswerError({"": "this button opens a form; it does not answer by itself"})


def form_answer(hf: HumanFunction, values: Mapping[str, list[str]], by: str) -> Answer:
    """Accept with the typed ``values`` (an approval's boolean set: its form is "Approve with details")."""
    content = coerce_text_values(hf.request_schema, values)
    field = approval_field(hf.request_schema)
    if field:
        content[field] = True
    return Answer(action=Action.ACCEPT, content=content, by=by, via=CHANNEL)
