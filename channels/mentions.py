"""How a post mentions people, in each platform's own syntax (docs/escalation.md#steps): a step's
``mention`` names them in approver forms (``slack:U1``, ``slack:group:S1``, ``discord:user:1``,
``discord:role:9``, ``teams:<aad object id>``). Pure: no I/O. Names of another platform are left
out (``humangate policy check`` refuses them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def slack_mentions(names: Sequence[str]) -> str:
    """``<@U1> <!subteam^S1>``: what a Slack message says to notify them."""
    words = []
    for name in names:
        if name.startswith("slack:group:"):
            words.append(f"<!subteam^{name.removeprefix('slack:group:')}>")
        elif name.startswith("slack:"):
            words.append(f"<@{name.removeprefix('slack:')}>")
    return " ".join(words)


def discord_mentions(names: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The message ``content`` (``<@1> <@&9>``) and the ``allowed_mentions`` that let exactly them
    be notified."""
    users = [n.removeprefix("discord:user:") for n in names if n.startswith("discord:user:")]
    roles = [n.removeprefix("discord:role:") for n in names if n.startswith("discord:role:")]
    content = " ".join([*(f"<@{u}>" for u in users), *(f"<@&{r}>" for r in roles)])
    return content, {"parse": [], "users": users, "roles": roles}


def teams_mentions(names: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """An Adaptive Card line (``<at>…</at>`` each) and its ``msteams.entities`` mentioning each AAD
    object id."""
    ids = [n.removeprefix("teams:") for n in names if n.startswith("teams:")]
    entities = [
        {"type": "mention", "text": f"<at>{aad}</at>", "mentioned": {"id": aad, "name": aad}} for aad in ids
    ]
    return " ".join(f"<at>{aad}</at>" for aad in ids), entities
