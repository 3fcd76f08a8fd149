"""Whether a Slack user is one of a request's approvers: their user id, or a user group they are in
(``usergroups.users.list``, each group's members kept at most ``GROUP_CACHE_SECONDS`` in this
process), docs/policies.md#approvers.

A look-up that fails (Slack unreachable, the app without ``usergroups:read``) counts as "not in the
group": an answer is refused rather than let through unchecked, and the log says why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.approvers import approvers_of, approves
from channels.base import Desk
from channels.slack.api import RESPONSE_EXCEPTIONS
from channels.slack.client import SlackClient
from schemas.models import HumanFunction

logger = logging.getLogger(__name__)

GROUP_CACHE_SECONDS = 60.0
"""Longest a user group's members are reused before Slack is asked again (a person removed from
the on-call group may still answer for this long)."""

GROUP_LOOKUP_TIMEOUT = 1.5
"""Seconds one ``usergroups.users.list`` may take (a click's modal must open within Slack's 3 s)."""

USER_PREFIX, GROUP_PREFIX = "slack:", "slack:group:"
"""How Slack approvers are written in a policy (``slack:U012AB3CD``, ``slack:group:S0ONCALL``)."""

_STATE_KEY = "group_members"


@dataclass
class GroupMembers:
    """The members of Slack user groups, each list kept for ``GROUP_CACHE_SECONDS``."""

    clock: Callable[[], float]
    _cache: dict[str, tuple[float, frozenset[str]]] = field(default_factory=dict)

    async def members(self, api: AsyncWebClient, group: str) -> frozenset[str]:
        """The user ids in ``group``; raises one of ``RESPONSE_EXCEPTIONS`` when Slack cannot say."""
        now = self.clock()
        cached = self._cache.get(group)
        if cached is not None and now - cached[0] < GROUP_CACHE_SECONDS:
            return cached[1]
        reply = await asyncio.wait_for(api.usergroups_users_list(usergroup=group), GROUP_LOOKUP_TIMEOUT)
        users = frozenset(str(user) for user in reply.get("users") or [])
        self._cache[group] = (now, users)
        return users


async def may_answer(desk: Desk, hf: HumanFunction, user_id: str) -> bool:
    """Whether the Slack user ``user_id`` may answer ``hf``: anyone without approvers; else one named
    by id, or a member of a user group named (looked up only when the id alone is not enough)."""
    return not hf.approvers or approves(hf, await held_by(desk, hf, user_id))


async def held_by(desk: Desk, hf: HumanFunction, user_id: str) -> list[str]:
    """What the Slack user ``user_id`` holds among ``hf``'s approvers: ``slack:<id>``, and each user
    group named that they are in. Groups are looked up only when the id alone is not enough, or every
    one of them for a sequential request (each group is a turn of its own)."""
    held = [USER_PREFIX + user_id] if user_id else []
    groups = approvers_of(hf, GROUP_PREFIX)
    every = hf.order == "sequential"
    if not user_id or not groups or (not every and approves(hf, held)):
        return held
    members: GroupMembers | None = desk.state.get(_STATE_KEY)
    if members is None:
        members = desk.state[_STATE_KEY] = GroupMembers(desk.now)
    client: SlackClient = await desk.client()
    for group in groups:
        try:
            if user_id in await members.members(client.api, group):
                held.append(GROUP_PREFIX + group)
                if not every:
                    return held
        except RESPONSE_EXCEPTIONS as exc:
            reason = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            logger.warning(
                "cannot read the members of user group %s hf=%s channel=slack (%s); not counted",
                group,
                hf.id,
                reason,
            )
    return held
