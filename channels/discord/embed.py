"""The embed of a Human Function's Discord message, pending or ended, within Discord's embed limits.

Pending: the agent's message (rendered from its Markdown by ``channels.discord.markdown``, cut to
what the embed holds with a "Read the whole request" link to the web form), who asks, the deadline
as a Discord timestamp, and for forms what each field takes. Ended: the same request with one line
saying how it ended, by whom and when (``channels.display.outcome_summary``), the answered values,
and no components left to click.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import discord

from channels.approvers import approvals_text, turn_text, who_may_answer
from channels.base import RenderContext
from channels.discord.components import layout_of, message_payload, pending_view, timestamp
from channels.discord.markdown import description as message_markdown
from channels.discord.markdown import length
from channels.discord.text import escape, field_hint
from channels.display import answered_values, approval_field, clip, field_label, outcome_summary
from channels.document import document_of
from channels.mentions import discord_mentions
from schemas.models import HumanFunction, Status

EMBED_TOTAL = 6000
"""Discord's limit of all the text in one embed (title, description, fields, footer)."""

MAX_TITLE = 256
MAX_DESCRIPTION = 4096
MAX_FIELD_NAME = 256
MAX_FIELD_VALUE = 1024
MAX_FIELDS = 25
"""Discord's limits of an embed's title, description, field name, field value and field count."""

MIN_DESCRIPTION = 600
"""Characters of the agent's message kept however many fields there are: fields give way first."""

MAX_ABOUT = 1000
"""Characters of the schema's description shown under the message."""

MAX_HINT = 300
"""Characters of a field's hint shown in a pending message (its modal shows the field itself)."""

COLOURS = {
    Status.PENDING: discord.Colour.blurple(),
    Status.ACCEPTED: discord.Colour.green(),
    Status.DECLINED: discord.Colour.red(),
    Status.CANCELED: discord.Colour.dark_grey(),
    Status.EXPIRED: discord.Colour.light_grey(),
}
"""The embed's side colour by status."""

Field = tuple[str, str, bool]
"""(name, value, inline) of one embed field, already escaped."""


def render_message(hf: HumanFunction, ctx: RenderContext, *, nonce: str | None = None) -> dict[str, Any]:
    """The message JSON (embed, components, ``allowed_mentions``) showing ``hf`` as it is now."""
    payload = message_payload(build_embed(hf, ctx), pending_view(hf) if hf.is_pending else None, nonce)
    if hf.mention and hf.is_pending:
        payload["content"], payload["allowed_mentions"] = discord_mentions(hf.mention)
    return payload


def mention(approver: str) -> str:
    """An approver as Discord mentions them (``<@81234>``, ``<@&99123>``); another platform's as
    written. Approvers come from the policy file, in forms checked when it was read."""
    if approver.startswith("discord:user:"):
        return f"<@{approver.removeprefix('discord:user:')}>"
    if approver.startswith("discord:role:"):
        return f"<@&{approver.removeprefix('discord:role:')}>"
    return escape(approver)


def build_embed(hf: HumanFunction, ctx: RenderContext) -> discord.Embed:
    schema = hf.request_schema
    title = schema.get("title")
    if not isinstance(title, str) or not title.strip():
        title = "Approval requested" if approval_field(schema) else "Input requested"
    footer = f"Human Function {hf.id}"
    fixed: list[Field] = [("Requested by", clip(escape(hf.requester), MAX_FIELD_VALUE), True)]
    summary = outcome_summary(hf)
    if summary is None:
        deadline = f"{timestamp(hf.deadline, 'f')} ({timestamp(hf.deadline, 'R')})"
        fixed.append(("Answer by", deadline, True))
        if (only := who_may_answer(hf)) is not None:
            fixed.append(("Approvers", clip(escape(only), MAX_FIELD_VALUE), False))
        if (count := approvals_text(hf)) is not None:
            turn = turn_text(hf, mention)
            value = escape(count) + (f"\n{turn}" if turn else "")
            fixed.append(("Approvals", clip(value, MAX_FIELD_VALUE), False))
        optional = _hint_fields(schema)
        more = "{} more fields: open the form to see them"
    else:
        line = f"{clip(escape(summary.sentence()), MAX_FIELD_VALUE - 40)} · {timestamp(summary.at, 'f')}"
        fixed.append(("Outcome", line, False))
        if (count := approvals_text(hf)) is not None:
            fixed.append(("Approvals", clip(escape(count), MAX_FIELD_VALUE), False))
        optional = [
            (clip(escape(label), MAX_FIELD_NAME), clip(escape(value) or "(empty)", MAX_FIELD_VALUE), False)
            for label, value in answered_values(hf)
        ]
        more = "{} more answers: the agent received them all"
    title = clip(escape(title), MAX_TITLE)
    used = len(title) + len(footer) + sum(len(name) + len(value) for name, value, _ in fixed)
    fields = _fit(fixed, optional, used, more)
    used = length(title) + length(footer) + sum(length(name) + length(value) for name, value, _ in fields)
    about = schema.get("description")
    about_text = "\n\n" + clip(escape(about), MAX_ABOUT) if isinstance(about, str) and about.strip() else ""
    budget = min(MAX_DESCRIPTION, EMBED_TOTAL - used) - length(about_text)
    message, _ = message_markdown(document_of(hf.message), budget, ctx.form_url)
    embed = discord.Embed(title=title, description=message + about_text, colour=COLOURS[hf.status])
    for name, value, inline in fields:
        embed.add_field(name=name, value=value, inline=inline)
    embed.set_footer(text=footer)
    return embed


def _hint_fields(schema: Mapping[str, Any]) -> list[Field]:
    """One field per property a form asks for (selects and buttons speak for themselves)."""
    if layout_of(schema) not in ("form", "web", "approval"):
        return []
    properties: Mapping[str, Any] = schema.get("properties") or {}
    skip = approval_field(schema)
    fields: list[Field] = []
    for name, prop in properties.items():
        if name == skip:
            continue
        hint = field_hint(schema, name)
        about = prop.get("description")
        if isinstance(about, str) and about.strip():
            hint += "\n" + about
        label = clip(escape(field_label(name, prop)), MAX_FIELD_NAME)
        fields.append((label, clip(escape(clip(hint, MAX_HINT)), MAX_FIELD_VALUE), False))
    return fields


def _fit(fixed: list[Field], optional: list[Field], used: int, more: str) -> list[Field]:
    """``fixed`` plus as many of ``optional`` as the embed holds, then one field saying what is left."""
    budget = EMBED_TOTAL - MIN_DESCRIPTION - 100
    fields = list(fixed)
    for index, (name, value, inline) in enumerate(optional):
        size = len(name) + len(value)
        if used + size > budget or len(fields) >= MAX_FIELDS - 1:
            fields.append(("…", more.format(len(optional) - index), False))
            break
        fields.append((name, value, inline))
        used += size
    return fields
