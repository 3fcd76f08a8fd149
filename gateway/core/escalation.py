"""What a policy's steps and reminders make of a new request (docs/escalation.md): the steps it
keeps, with their targets resolved, and the schedule entries created with it.

The names of scheduled work are here too: ``step:<id>:<index>:<channel>`` posts step ``index`` on
``channel`` (``workers.steps.post_step``), ``remind:<id>:<index>:<channel>`` sends reminder
``index`` (``workers.steps.remind``, run on ``channel``'s queue).
"""

from __future__ import annotations

from channels.registry import CHANNELS
from gateway.core.queue import Command
from gateway.core.schedule import Entry, add_commands
from schemas.models import HumanFunction
from schemas.policies import Policy, Step
from schemas.results import duration_text

STEP = "step"
"""The schedule kind of an escalation step."""

REMIND = "remind"
"""The schedule kind of a reminder."""


def planned_steps(policy: Policy | None, channel: str, target: str | None) -> list[Step]:
    """The steps of a new request on ``channel`` (posted at ``target``), targets resolved. The first
    is the request's own post: the caller's ``uiType`` may have chosen another channel than the
    policy's first step, and then the first post is that one, without the step's mentions."""
    if policy is None or not policy.steps:
        return []
    first = policy.steps[0]
    if first.channel != channel:
        first = Step.model_validate({"after": 0, "channel": channel})
    steps = [first.model_copy(update={"target": target})]
    steps += [step.model_copy(update={"target": policy.target_of(step)}) for step in policy.steps[1:]]
    return steps


def schedule_commands(hf: HumanFunction) -> list[Command]:
    """The schedule entries of ``hf``'s later steps and its reminders, before its deadline."""
    commands: list[Command] = []
    last = hf.full_deadline if hf.full_deadline is not None else hf.deadline
    for index, step in enumerate(hf.steps[1:], start=1):
        due = hf.created_at + step.after
        if due < last:
            commands += add_commands(Entry(STEP, hf.id, f"{index}:{step.channel}"), due)
    queue = reminder_channel(hf)
    if queue is not None:
        for index, after in enumerate(hf.remind):
            due = hf.created_at + after
            if due < last:
                commands += add_commands(Entry(REMIND, hf.id, f"{index}:{queue}"), due)
    return commands


def escalation_text(hf: HumanFunction) -> str | None:
    """``escalated to teams after 2 minutes, discord after 5 minutes`` (the steps that fired), for
    the agent's progress; ``None`` when none has."""
    fired = [hf.steps[i] for i in hf.fired if 0 < i < len(hf.steps)]
    if not fired:
        return None
    return "escalated to " + ", ".join(f"{step.channel} after {duration_text(step.after)}" for step in fired)


def reminder_channel(hf: HumanFunction) -> str | None:
    """The channel whose workers send ``hf``'s reminders: its own if it posts, else its first step's
    that does (``None``: nothing of it is ever posted)."""
    for channel in [hf.channel, *(step.channel for step in hf.steps)]:
        platform = CHANNELS.get(channel)
        if platform is not None and platform.posts:
            return channel
    return None


def update_channel(hf: HumanFunction) -> str | None:
    """The channel whose workers update ``hf``'s posts once it ended (``None``: it has none)."""
    return reminder_channel(hf)
