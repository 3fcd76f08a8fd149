"""The data of a Human Function: what was asked, where, by whom, and how it ended."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from schemas.policies import Step


class Action(StrEnum):
    """What a person (or the clock, or the agent) did with a request; MCP's three actions."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class Status(StrEnum):
    """Where a Human Function is in its life; every status but ``pending`` is terminal."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    CANCELED = "canceled"
    EXPIRED = "expired"

    @property
    def is_terminal(self) -> bool:
        return self is not Status.PENDING


STATUS_OF_ACTION = {
    Action.ACCEPT: Status.ACCEPTED,
    Action.DECLINE: Status.DECLINED,
    Action.CANCEL: Status.CANCELED,
}
"""The terminal status a person's action leads to (expiry has no action of its own)."""


class Person(BaseModel):
    """Who answered, as the platform verified them, and where (``answeredBy``'s shape,
    docs/tools.md#results): where they answered, their verified id, and the name it shows. (A web
    sign-in's session keeps the person signed in as ``Person(channel="email", id=<address>)``; an
    answer they give carries ``web`` or ``inbox`` and ``email:<address>``.)"""

    model_config = ConfigDict(frozen=True)

    channel: str = Field(description="where the answer was given: slack, discord, teams, web, inbox")
    id: str = Field(
        description="the verified id: the platform's user id on a chat platform (a Slack user id, a Teams "
        "AAD object id); on the web form and the inbox the approvers' name (email:<address>, operator:<name>)"
    )
    name: str = Field(description="the name the platform shows for them")


class Answer(BaseModel):
    """A person's answer as a channel parsed it, before it is validated and recorded."""

    model_config = ConfigDict(frozen=True)

    action: Action
    content: dict[str, Any] | None = None
    reason: str | None = None
    by: str = Field(description="who answered, as the channel knows them (e.g. 'Ada (U123)')")
    via: str = Field(description="the channel the answer came through")
    person: Person | None = Field(
        None,
        description="who answered, as their platform verified them; None where no platform vouches "
        "for them (the web form's capability link)",
    )
    held: tuple[str, ...] = Field(
        (),
        description="what the person holds among the request's approvers, as their channel verified "
        "it (slack:U1, slack:group:S1, discord:role:9, operator:alice): whose turn they may take in a "
        "sequential request",
    )


class Approval(BaseModel):
    """One acceptance of a request that needs more than one (docs/policies.md#approvals): who gave it
    (``answeredBy``'s shape: channel, id, name), when, and what they answered."""

    model_config = ConfigDict(frozen=True)

    by: dict[str, str | None]
    at: float
    content: dict[str, Any] | None = None


class Outcome(BaseModel):
    """How a Human Function ended; stored once, by the first terminal transition."""

    model_config = ConfigDict(frozen=True)

    status: Status
    action: Action
    content: dict[str, Any] | None = None
    reason: str | None = None
    by: str | None = None
    via: str
    at: float
    person: Person | None = None
    """Who answered, as their platform verified them (``None``: the clock or the agent ended it, or
    a form link nobody signed in to)."""
    approvals: list[Approval] | None = None
    """Of a request that needs more than one approval: every acceptance recorded, in order (the
    store adds them when it ends); ``None`` for every other request."""

    @model_serializer(mode="wrap")
    def _without_no_approvals(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Written only when there are some to write: every other outcome's JSON stays as it was.
        data: dict[str, Any] = handler(self)
        if data.get("approvals", ()) is None:
            del data["approvals"]
        return data


class HumanFunction(BaseModel):
    """One request for a person's input. ``request_schema`` keeps the caller's key order."""

    id: str
    requester: str
    """Who asked, as people see it: the API key's name, or ``anonymous``."""
    owner: str = ""
    """The identity that owns it (``Caller.identity``): only it may read, re-attach or withdraw."""
    channel: str
    message: str
    request_schema: dict[str, Any]
    created_at: float
    deadline: float
    full_deadline: float | None = None
    """While nobody has started answering a request opened with an idle timeout, ``deadline`` is
    that short one; this is the deadline it gets once a person starts (``None``: no idle timeout)."""
    form_secret: str = Field(repr=False)
    other_fields: dict[str, str] = Field(default_factory=dict)
    """Select property -> the optional text property that holds its "Other" answer; both must not be
    answered for a single choice, and one of them must be (``schemas.other_fields``)."""
    policy: str | None = None
    """The name of the policy it was opened under (docs/policies.md), if any."""
    target: str | None = None
    """Where its channel posts it, from its policy (a Slack channel or user, a Discord channel, a
    Teams conversation); ``None``: the channel's configured default."""
    approvers: list[str] = Field(default_factory=list)
    """Who may answer it, from its policy (``slack:U1``, ``slack:group:S1``, ``discord:role:9``,
    ``operator:alice``, ...; docs/policies.md#approvers); empty: anyone who sees it."""
    approvals_needed: int = 1
    """Distinct approvers who must accept, from its policy (docs/policies.md#approvals)."""
    order: str = "any"
    """``sequential``: only the approver whose turn it is may answer (``approvers[len(approvals)]``)."""
    on_timeout: str = "cancel"
    """How it ends at its deadline: ``cancel`` (a timeout), or ``decline``."""
    approvals: list[Approval] = Field(default_factory=list)
    """The acceptances recorded so far, in order (only a request needing more than one has any)."""
    mention: list[str] = Field(default_factory=list)
    """Who its post mentions (its first step's ``mention``); a step's post mentions that step's."""
    steps: list[Step] = Field(default_factory=list)
    """Where it is posted and when, from its policy, each with its target resolved
    (docs/escalation.md#steps); the first is its first post (``channel``). Empty: no steps."""
    remind: list[float] = Field(default_factory=list)
    """Seconds after creation at which its live posts get a reminder (docs/escalation.md#reminders)."""
    fired: list[int] = Field(default_factory=list)
    """The steps after the first that have fired (their approvers may answer too), in order."""
    posts: dict[int, dict[str, Any]] = Field(default_factory=dict)
    """Step index -> where that step posted (``refs``, as ``refs`` is for the first post)."""
    tool_call: dict[str, Any] | None = None
    """The tool call a permission prompt opened over REST asks about (``{"name", "input"}``;
    docs/permissions.md#rest), so that its result gives the input back whichever process reads it."""
    status: Status = Status.PENDING
    outcome: Outcome | None = None
    refs: dict[str, Any] = Field(default_factory=dict)
    delivery_error: str | None = None
    delivery_attempts: int = Field(
        0, description="deliver jobs started so far; above 1 a channel first looks for an earlier post"
    )

    @property
    def is_pending(self) -> bool:
        return self.status is Status.PENDING

    @property
    def counts_approvals(self) -> bool:
        """Whether each acceptance is recorded on its own (more than one needed, or asked in turn)."""
        return self.approvals_needed > 1 or self.order == "sequential"

    @property
    def turn(self) -> str | None:
        """The approver whose turn it is to answer, of a sequential request still pending."""
        if self.order != "sequential" or not self.is_pending or len(self.approvals) >= len(self.approvers):
            return None
        return self.approvers[len(self.approvals)]

    @property
    def form_token(self) -> str:
        """The capability in the form URL: the id plus an unguessable secret (>= 128 bits)."""
        return f"{self.id}.{self.form_secret}"

    @property
    def timeout_seconds(self) -> float:
        return self.deadline - self.created_at

    def seconds_left(self, now: float) -> float:
        return max(0.0, self.deadline - now)
