"""The rules between the keys of one policy table (docs/policies.md#the-file): a step's target and
mentions fit its channel, steps come in order and before the timeout, reminders too, targets and
steps use the policy's channels, and approvals can be given by its approvers.

Pydantic checks each key on its own (``schemas.policies``); a model validator would run only once
every key passed, so one wrong key would hide every rule between the others. These rules therefore
read the table as written (TOML values, or a ``Policy`` dumped), each using only the keys that are
right on their own, and report every rule broken, each at its own place.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from schemas.mail import ADDRESS, ADDRESS_RULE, address_mistake

Loc = tuple[str | int, ...]
"""A place in the table: keys and list indexes (``("steps", 1, "after")``), as pydantic's ``loc``."""

TARGET_FORMS = {
    "slack": (re.compile(r"[CGDUW][A-Z0-9]+"), "a channel id (like C0123ABCD) or a user id (like U0123ABCD)"),
    "discord": (re.compile(r"[0-9]{1,20}"), "a channel id (digits, like 1234567890123456789)"),
    "teams": (re.compile(r"\S+"), "a conversation id (like 19:abc...@thread.tacv2)"),
    "telegram": (
        re.compile(r"-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31}"),
        "a chat id (an integer, like -1001234567890) or a channel's @name (like @deploys)",
    ),
    "email": (
        re.compile(rf"\s*{ADDRESS.pattern}(\s*,\s*{ADDRESS.pattern})*\s*"),
        f"one or more addresses, comma-separated, each {ADDRESS_RULE}",
    ),
}
"""What a target looks like on each channel that posts (the web form posts nothing: it has none)."""


def target_mistake(channel: str, value: str) -> str | None:
    """Why ``value`` is not a target of ``channel`` (which must have targets), or ``None``."""
    if channel == "email":
        return address_mistake(value)  # names the one address that is wrong
    form, words = TARGET_FORMS[channel]
    return None if form.fullmatch(value) else f"{value[:200]!r} is not {words}"


MENTION_PREFIXES = {
    "slack": ("slack:",),
    "discord": ("discord:user:", "discord:role:"),
    "teams": ("teams:",),
    "web": (),
    "telegram": ("telegram:",),
    "email": (),
}
"""Which approver forms a post on each channel can mention (the web form posts nothing; an email
notifies its recipients, so it mentions no one)."""

NO_MENTIONS = {
    "web": "it posts nothing",
    "email": "an email notifies its recipients: list them in the step's target or targets.email",
}
"""Why a channel that mentions no one refuses a step's ``mention``."""

GROUP_PREFIXES = ("slack:group:", "discord:role:")
"""Approvers that stand for many people (a Slack user group, a Discord role); each still counts as
one turn when ``order = "sequential"``."""


class _Known:
    """The keys of one table that are right on their own: those under no refused place."""

    def __init__(self, table: Mapping[str, Any], refused: Collection[Loc], base: Loc = ()) -> None:
        self.table = table
        self.refused = refused
        self.base = base

    def get(self, *path: str | int) -> Any:
        """The value at ``path`` (``None``: absent, or refused there, under it or around it)."""
        place = (*self.base, *path)
        if any(loc[: len(place)] == place or place[: len(loc)] == loc for loc in self.refused):
            return None
        value: Any = self.table
        for part in place:
            if isinstance(part, int):
                value = value[part] if isinstance(value, list) and part < len(value) else None
            else:
                value = value.get(part) if isinstance(value, Mapping) else None
        return value


def table_rules(table: Mapping[str, Any], refused: Collection[Loc] = ()) -> list[tuple[Loc, str]]:
    """Every rule between the keys of ``table`` that it breaks, each with its place; ``refused``
    holds the places pydantic refused (their values are not used)."""
    known = _Known(table, refused)
    steps = table.get("steps")
    found: list[tuple[Loc, str]] = []
    if isinstance(steps, list):
        for index in range(len(steps)):
            found += [(("steps", index, *loc), rule) for loc, rule in _step_rules(known, index)]
        found += _step_order(known, len(steps))
    found += _reminders(known)
    found += _targets(known)
    found += _approvals(known)
    return found


def _step_rules(known: _Known, index: int) -> list[tuple[Loc, str]]:
    """A step's target and mentions fit its channel."""
    step = _Known(known.table, known.refused, (*known.base, "steps", index))
    channel = step.get("channel")
    if channel is None:
        return []
    found: list[tuple[Loc, str]] = []
    target = step.get("target")
    if target is not None:
        if channel not in TARGET_FORMS:
            found.append((("target",), "the web form posts nothing, so it has no target"))
        elif isinstance(target, str) and (mistake := target_mistake(channel, target)) is not None:
            found.append((("target",), mistake))
    prefixes = MENTION_PREFIXES.get(channel, ())
    for at, name in enumerate(_list(known.get("steps", index, "mention"))):
        if step.get("mention", at) is not None and not str(name).startswith(prefixes):
            how = f"use {', '.join(p + '...' for p in prefixes)}" if prefixes else NO_MENTIONS[channel]
            found.append((("mention", at), f"{name!r} cannot be mentioned on {channel} ({how})"))
    return found


def _step_order(known: _Known, count: int) -> list[tuple[Loc, str]]:
    """Steps in order, the web form first if at all, on the policy's channels, before its timeout."""
    channels, timeout = known.get("channels"), known.get("timeout")
    found: list[tuple[Loc, str]] = []
    for index in range(count):
        after, channel = known.get("steps", index, "after"), known.get("steps", index, "channel")
        before = known.get("steps", index - 1, "after") if index > 0 else None
        if index == 0 and after is not None and after != 0:
            found.append((("steps", 0, "after"), "the first step must have after = 0 (it is the first post)"))
        if after is not None and before is not None and after < before:
            found.append(
                (
                    ("steps", index, "after"),
                    f"must not be less than the step before's ({after:g} < {before:g})",
                )
            )
        if index > 0 and channel == "web":
            found.append(
                (("steps", index, "channel"), "web posts nothing, so only the first step may use it")
            )
        if channel is not None and channels is not None and channel not in channels:
            found.append(
                (
                    ("steps", index, "channel"),
                    f"{channel} is not in this policy's channels ({', '.join(channels)})",
                )
            )
        if after is not None and timeout is not None and after >= timeout:
            found.append(
                (
                    ("steps", index, "after"),
                    f"{after:g} s is not before the policy's timeout ({timeout:g} s), so it would never post",
                )
            )
    return found


def _reminders(known: _Known) -> list[tuple[Loc, str]]:
    timeout = known.get("timeout")
    if timeout is None:
        return []
    return [
        (("remind", index), f"{at:g} s is not before the policy's timeout ({timeout:g} s)")
        for index, at in enumerate(_list(known.get("remind")))
        if at >= timeout
    ]


def _targets(known: _Known) -> list[tuple[Loc, str]]:
    channels = known.get("channels")
    targets = known.get("targets")
    if channels is None or not isinstance(targets, Mapping):
        return []
    return [
        (("targets", channel), f"{channel} is not in this policy's channels ({', '.join(channels)})")
        for channel in TARGET_FORMS
        if targets.get(channel) is not None and channel not in channels
    ]


def _approvals(known: _Known) -> list[tuple[Loc, str]]:
    """Approvals that the approvers can give (one rule: each presumes the one before holds)."""
    approvals, order, approvers = known.get("approvals"), known.get("order"), known.get("approvers")
    if (approvals is None and "approvals" in known.table) or (order is None and "order" in known.table):
        return []  # refused on its own: that mistake is reported, not one built on a wrong value
    if approvers is None and "approvers" in known.table and known.table["approvers"] is not None:
        return []
    approvals = 1 if approvals is None else approvals
    approvers = _list(approvers)
    if (approvals > 1 or order == "sequential") and not approvers:
        why = f"approvals = {approvals}" if approvals > 1 else 'order = "sequential"'
        return [(("approvers",), f"{why} needs approvers; list who may approve")]
    if order == "sequential" and approvals != len(approvers):
        return [
            (
                ("approvals",),
                'with order = "sequential" every approver is asked in turn, so approvals must be '
                f"{len(approvers)} (the number of approvers), not {approvals}",
            )
        ]
    groups = any(str(name).startswith(GROUP_PREFIXES) for name in approvers)
    if approvals > 1 and approvals > len(approvers) and not groups:
        return [
            (
                ("approvals",),
                f"{approvals} approvals need at least {approvals} approvers (or a group or role); "
                f"{len(approvers)} listed",
            )
        ]
    return []


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []
