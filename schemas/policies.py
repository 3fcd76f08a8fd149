"""Policies: which callers' requests wait how long, on which channels, posted where, answered by whom
(docs/policies.md). Read from one TOML file with the standard library, checked with pydantic.

A mistake is reported with its line and field (``humangate.toml:7: policies.deploys.timeout: ...``):
``tomllib`` gives the line of a syntax error, ``schemas.toml_lines`` the line of a key pydantic
refused. Parsing is pure: reading the file is the caller's (``gateway.core.policies``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from schemas.errors import HumangateError
from schemas.mail import ADDRESS
from schemas.policy_rules import MENTION_PREFIXES, TARGET_FORMS, Loc, table_rules, target_mistake
from schemas.toml_lines import KeyLines
from schemas.tool_rules import ToolRules, parse_rule
from schemas.unique import unique
from schemas.webhooks import EVENT_TYPES, Webhook, webhook_lines

ANY_CALLER = "*"
"""In ``callers``: every caller, with a key or without."""

ANONYMOUS = "anonymous"
"""In ``callers``: every caller without a key."""

NAME_RULE = "use 1-64 letters, digits, '-' or '_'"
"""The rule of policy names and key names."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_AT_LINE = re.compile(r"\s*\(at line (\d+), column \d+\)")
_APPROVER_FORMS = (
    (re.compile(r"slack:[UW][A-Z0-9]+"), "slack:U012AB3CD"),
    (re.compile(r"slack:group:S[A-Z0-9]+"), "slack:group:S0DEPLOY"),
    (re.compile(r"discord:user:[0-9]{1,20}"), "discord:user:81234"),
    (re.compile(r"discord:role:[0-9]{1,20}"), "discord:role:99123"),
    (re.compile(r"teams:[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"), "teams:<aadObjectId>"),
    (re.compile(r"telegram:[0-9]{1,20}"), "telegram:123456789"),
    (re.compile(r"email:" + ADDRESS.pattern), "email:alice@example.com"),
    (re.compile(r"operator:[A-Za-z0-9_-]{1,64}"), "operator:alice"),
)
"""Every form an approver may take, with an example of each."""

ChannelName = Literal["slack", "discord", "teams", "web", "telegram", "email"]


def is_name(value: str) -> bool:
    """Whether ``value`` follows ``NAME_RULE`` (a policy's name, a key's name)."""
    return _NAME.fullmatch(value) is not None


def _caller(value: str) -> str:
    if value not in (ANY_CALLER, ANONYMOUS) and not _NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a key name ({NAME_RULE}), 'anonymous' or '*'")
    return value


def _approver(value: str) -> str:
    if not any(form.fullmatch(value) for form, _ in _APPROVER_FORMS):
        examples = ", ".join(example for _, example in _APPROVER_FORMS)
        raise ValueError(f"{value!r} is not an approver; the forms are {examples}")
    return value


def _target(channel: str) -> Any:
    def check(value: str) -> str:
        mistake = target_mistake(channel, value)
        if mistake is not None:
            raise ValueError(mistake)
        return value

    return AfterValidator(check)


class Targets(BaseModel):
    """Where each channel posts a policy's requests, instead of its configured default."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    slack: Annotated[str, _target("slack")] | None = None
    discord: Annotated[str, _target("discord")] | None = None
    teams: Annotated[str, _target("teams")] | None = None
    email: Annotated[str, _target("email")] | None = None
    """Addresses, comma-separated, instead of ``HUMANGATE_EMAIL_TO``."""
    telegram: Annotated[str, _target("telegram")] | None = None
    """A chat id (or a channel's @name), instead of ``HUMANGATE_TELEGRAM_CHAT_ID``."""

    def of(self, channel: str) -> str | None:
        """The target of ``channel``, if this policy sets one."""
        value = getattr(self, channel, None) if channel in TARGET_FORMS else None
        return value if isinstance(value, str) else None

    def items(self) -> list[tuple[str, str]]:
        """(channel, target) of every target set, in channel order."""
        return [(channel, target) for channel in TARGET_FORMS if (target := self.of(channel))]


def _tool_rule(value: str) -> str:
    parse_rule(value)  # a ToolRuleError is a ValueError: reported at the rule's line
    return value


ToolRuleList = Annotated[list[Annotated[str, AfterValidator(_tool_rule)]], AfterValidator(unique)]


class Tools(BaseModel):
    """``[policies.<name>.tools]``: tool permission rules in Claude Code's syntax, decided without a
    person (docs/policies.md#tool-rules); deny, then ask, then allow."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    allow: ToolRuleList = Field(default_factory=list)
    ask: ToolRuleList = Field(default_factory=list)
    """Calls a person must decide even when an allow rule names them."""
    deny: ToolRuleList = Field(default_factory=list)
    _rules: ToolRules = PrivateAttr(default_factory=ToolRules)

    def model_post_init(self, context: Any, /) -> None:
        # parse_rule is cached: each rule is parsed once, when the field is checked.
        self._rules = ToolRules.parse(self.allow, self.ask, self.deny)

    @property
    def rules(self) -> ToolRules:
        """The three lists, parsed."""
        return self._rules


class Step(BaseModel):
    """One ``[[policies.<name>.steps]]`` table (docs/escalation.md#steps): once ``after`` seconds
    have passed and the request is still pending, it is posted on ``channel`` too."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    after: float = Field(ge=0)
    """Seconds after the request was created."""
    channel: ChannelName
    target: str | None = None
    """Where the channel posts it: else the policy's target of that channel, else its default."""
    mention: Annotated[list[Annotated[str, AfterValidator(_approver)]], AfterValidator(unique)] = Field(
        default_factory=list
    )
    """People (or groups, roles) mentioned in the post, in approver forms of the step's channel."""
    approvers: Annotated[list[Annotated[str, AfterValidator(_approver)]], AfterValidator(unique)] = Field(
        default_factory=list
    )
    """Who may answer too once the step has posted, beside the policy's approvers."""


def _ascending(values: list[float]) -> list[float]:
    for index in range(1, len(values)):
        if values[index] <= values[index - 1]:
            raise ValueError(
                f"must be in ascending order, each once ({values[index]:g} after {values[index - 1]:g})"
            )
    return values


class PolicyTable(BaseModel):
    """One ``[policies.<name>]`` table as written; every key is optional (docs/policies.md#the-file)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    callers: Annotated[list[Annotated[str, AfterValidator(_caller)]], AfterValidator(unique)] | None = Field(
        None, min_length=1
    )
    """Key names, ``anonymous`` or ``*``; left out, the policy applies to every caller."""
    timeout: float | None = Field(None, gt=0)
    """Seconds a request waits; replaces the caller's timeout."""
    channels: Annotated[list[ChannelName], AfterValidator(unique)] | None = Field(None, min_length=1)
    """The ``uiType`` values allowed; another is refused, naming these."""
    approvers: Annotated[list[Annotated[str, AfterValidator(_approver)]], AfterValidator(unique)] = Field(
        default_factory=list
    )
    """Who may answer (docs/policies.md#approvers); empty: anyone who sees a request."""
    targets: Targets = Field(default_factory=Targets)
    rate_limit: int | None = Field(None, gt=0)
    """New requests per minute of each caller, instead of its ``HUMANGATE_RATE_LIMIT`` tier."""
    max_pending: int | None = Field(None, gt=0)
    """Requests pending at once of each caller, instead of its ``HUMANGATE_MAX_PENDING`` tier."""
    approvals: int = Field(1, ge=1)
    """Distinct approvers who must accept (docs/policies.md#approvals); any decline ends it declined."""
    order: Literal["any", "sequential"] = "any"
    """``sequential``: the approvers are asked one at a time, in list order."""
    on_timeout: Literal["cancel", "decline"] = "cancel"
    """How a request nobody finished answering ends at its deadline; never accepted."""
    remind: Annotated[list[Annotated[float, Field(gt=0)]], AfterValidator(_ascending)] = Field(
        default_factory=list
    )
    """Seconds after creation at which every live post gets a reminder (docs/escalation.md#reminders)."""
    steps: list[Step] = Field(default_factory=list)
    """Where the request is posted, and when (docs/escalation.md#steps); empty: its channel only."""
    tools: Tools = Field(default_factory=Tools)
    """Tool permission rules (docs/policies.md#tool-rules); empty: a person decides every call."""

    def target_of(self, step: Step) -> str | None:
        """Where ``step`` posts: its own target, else this policy's target of its channel."""
        return step.target if step.target is not None else self.targets.of(step.channel)


class Policy(PolicyTable):
    """A policy with its name (the table's); it keeps every rule between its keys (``table_rules``)."""

    name: str

    @model_validator(mode="after")
    def _rules_between_keys(self) -> Policy:
        broken = table_rules(self.model_dump(exclude={"name"}))
        if broken:
            raise ValueError("; ".join(f"{_field(loc)}: {rule}" for loc, rule in broken))
        return self

    def applies_to(self, caller: str, authenticated: bool) -> bool:
        """Whether this policy's ``callers`` names the caller (key ``caller``, or anonymous)."""
        if self.callers is None or ANY_CALLER in self.callers:
            return True
        return caller in self.callers if authenticated else ANONYMOUS in self.callers

    def describe(self) -> str:
        """One line saying what the policy does, for ``humangate policy check``."""
        parts = [f"callers {', '.join(self.callers) if self.callers else 'any'}"]
        if self.timeout is not None:
            parts.append(f"timeout {self.timeout:g} s")
        if self.channels:
            parts.append(f"channels {', '.join(self.channels)}")
        parts += [f"{channel} -> {target}" for channel, target in self.targets.items()]
        if self.approvers:
            parts.append(f"{len(self.approvers)} approver(s)")
        if self.rate_limit is not None:
            parts.append(f"rate limit {self.rate_limit}/min")
        if self.max_pending is not None:
            parts.append(f"max pending {self.max_pending}")
        if self.approvals > 1 or self.order != "any":
            parts.append(f"{self.approvals} approval(s), {self.order} order")
        if self.on_timeout != "cancel":
            parts.append(f"on timeout {self.on_timeout}")
        if self.steps:
            parts.append("steps " + ", ".join(f"{step.channel} at {step.after:g} s" for step in self.steps))
        if self.remind:
            parts.append("reminders at " + ", ".join(f"{at:g} s" for at in self.remind))
        if self.tools.rules:
            rules = self.tools
            parts.append(f"tool rules {len(rules.allow)} allow, {len(rules.ask)} ask, {len(rules.deny)} deny")
        return f"{self.name}: " + "; ".join(parts)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    policies: dict[str, PolicyTable] = Field(default_factory=dict)
    webhooks: list[Webhook] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Mistake:
    """One mistake in a policy file: its line (``None`` when it has none: a file that cannot be read),
    the field (dotted, ``policies.deploys.timeout``; empty for the file) and the rule it breaks."""

    line: int | None
    field: str
    rule: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.field}: {self.rule}" if self.field else f"{where}{self.rule}"

    def at(self, source: str, kind: str = "") -> str:
        """``FILE:LINE: field: rule`` (``kind`` before the field: ``warning: ``), as
        ``humangate policy check`` and ``serve`` print it."""
        line = f":{self.line}" if self.line is not None else ""
        return (
            f"{source}{line}: {kind}{self.field}: {self.rule}"
            if self.field
            else f"{source}{line}: {kind}{self.rule}"
        )


class PolicyFileError(HumangateError):
    """A policy file humangate cannot use; ``mistakes`` lists each one with its line and field."""

    def __init__(self, source: str, mistakes: list[Mistake]) -> None:
        self.source = source
        self.mistakes = mistakes
        lines = "\n".join(f"  {mistake}" for mistake in mistakes)
        super().__init__(f"{source} has {len(mistakes)} mistake(s):\n{lines}")


@dataclass(frozen=True, slots=True)
class Policies:
    """The policies of one file, in file order; empty when there is no file (nothing changes)."""

    policies: tuple[Policy, ...] = ()
    source: str = ""
    """Where they were read from (a path), for messages."""
    webhooks: tuple[Webhook, ...] = ()
    """The ``[[webhooks]]`` tables, in file order (docs/webhooks.md)."""

    def first_for(self, caller: str, authenticated: bool) -> Policy | None:
        """The first policy, in file order, that applies to the caller."""
        return next((p for p in self.policies if p.applies_to(caller, authenticated)), None)

    def named(self, name: str) -> Policy | None:
        return next((p for p in self.policies if p.name == name), None)

    @property
    def names(self) -> list[str]:
        return [policy.name for policy in self.policies]


def parse_policies(text: str, source: str = "the policy file") -> Policies:
    """The policies of a TOML text; ``PolicyFileError`` naming the line and field of every mistake."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # Python 3.14 has exc.lineno; before it, the line is only in the message.
        found = _AT_LINE.search(str(exc))
        line = int(found.group(1)) if found else None
        rule = _AT_LINE.sub("", str(exc)).strip()
        raise PolicyFileError(source, [Mistake(line, "", f"not valid TOML: {rule}")]) from None
    lines = KeyLines(text)
    hooks = webhook_lines(text)
    mistakes = [
        Mistake(lines.line_of(loc), _field(loc), rule) for loc, rule in _check_names(data.get("policies"))
    ]
    mistakes += [Mistake(_line(lines, hooks, loc), _field(loc), rule) for loc, rule in _check_urls(data)]
    refused: list[Loc] = []
    parsed: _File | None = None
    try:
        parsed = _File.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            loc, rule = _explained(error)
            refused.append(loc)
            mistakes.append(Mistake(_line(lines, hooks, loc), _field(loc), rule))
    # The rules between a table's keys run whatever else is wrong (schemas.policy_rules).
    tables = data.get("policies")
    for name, table in tables.items() if isinstance(tables, Mapping) else ():
        if isinstance(table, Mapping):
            own = [loc[2:] for loc in refused if loc[:2] == ("policies", name)]
            for loc, rule in table_rules(table, own):
                place = ("policies", name, *loc)
                mistakes.append(Mistake(lines.line_of(place), _field(place), rule))
    if mistakes or parsed is None:
        raise PolicyFileError(source, _sorted(mistakes))
    named = tuple(Policy(name=name, **dict(table)) for name, table in parsed.policies.items())
    return Policies(named, source, tuple(parsed.webhooks))


def _line(lines: KeyLines, hooks: list[dict[str, int]], loc: tuple[str | int, ...]) -> int | None:
    """The line of ``loc``; in the ``i``-th ``[[webhooks]]`` table, that of its key (or header)."""
    if len(loc) >= 2 and loc[0] == "webhooks" and isinstance(loc[1], int) and loc[1] < len(hooks):
        table = hooks[loc[1]]
        return table.get(str(loc[2]), table[""]) if len(loc) >= 3 else table[""]
    return lines.line_of(loc)


def _check_urls(data: Mapping[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Two ``[[webhooks]]`` tables with one URL: a delivery is known by its URL."""
    hooks = data.get("webhooks")
    if not isinstance(hooks, list):
        return []
    seen: set[str] = set()
    found: list[tuple[tuple[str | int, ...], str]] = []
    for index, hook in enumerate(hooks):
        url = hook.get("url") if isinstance(hook, Mapping) else None
        if isinstance(url, str):
            if url in seen:
                found.append((("webhooks", index, "url"), f"{url!r} is the URL of an earlier webhook"))
            seen.add(url)
    return found


def _check_names(policies: object) -> list[tuple[tuple[str | int, ...], str]]:
    if not isinstance(policies, Mapping):
        return []
    return [
        (("policies", str(name)), f"a policy name must {NAME_RULE}")
        for name in policies
        if not _NAME.fullmatch(str(name))
    ]


def sorted_mistakes(mistakes: list[Mistake]) -> list[Mistake]:
    """In file order: by line (those without one last), then field."""
    return _sorted(mistakes)


def _sorted(mistakes: list[Mistake]) -> list[Mistake]:
    return sorted(mistakes, key=lambda m: (m.line is None, m.line or 0, m.field))


def _field(loc: tuple[str | int, ...]) -> str:
    """``("policies", "deploys", "approvers", 2)`` -> ``policies.deploys.approvers[2]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


_UNKNOWN_KEY = {
    1: "a policy file holds only [policies.<name>] and [[webhooks]] tables",
    3: "is not a policy setting; the settings are " + ", ".join(PolicyTable.model_fields),
    4: "is not a channel with a target; targets are set for " + ", ".join(TARGET_FORMS),
}
"""What an unknown key is told, by the length of its place (file, policy, targets)."""


def _explained(error: ErrorDetails) -> tuple[tuple[str | int, ...], str]:
    """The place and the rule of one pydantic error, in the words of the file (without pydantic's
    internal parts of ``loc``, like the ``function-after[...]`` of a validator)."""
    loc = tuple(part for part in error["loc"] if not (isinstance(part, str) and "[" in part))
    kind, message = error["type"], error["msg"]
    if kind == "extra_forbidden" and loc[:1] == ("webhooks",):
        return loc, "is not a webhook setting; the settings are " + ", ".join(Webhook.model_fields)
    if kind == "literal_error" and loc[:1] == ("webhooks",):
        return loc, f"{error['input']!r} is not an event; the events are " + ", ".join(EVENT_TYPES)
    if kind == "missing":
        return loc, "is required"
    if kind == "extra_forbidden":
        if len(loc) == 5 and loc[2] == "steps":
            return loc, "is not a step setting; the settings are " + ", ".join(Step.model_fields)
        if len(loc) == 4 and loc[2] == "tools":
            return loc, "is not a list of tool rules; the lists are " + ", ".join(Tools.model_fields)
        return loc, _UNKNOWN_KEY.get(len(loc), "is not allowed here")
    if kind == "value_error":
        return loc, message.removeprefix("Value error, ")
    if kind == "literal_error" and len(loc) >= 3 and (loc[2] == "channels" or loc[-1] == "channel"):
        return loc, f"{error['input']!r} is not a channel; the channels are " + ", ".join(MENTION_PREFIXES)
    if kind == "literal_error" and len(loc) == 3 and loc[2] in ("order", "on_timeout"):
        return loc, f"{error['input']!r} is not one of " + message.removeprefix("Input should be ")
    if kind in ("string_type", "int_type", "float_type", "list_type", "model_type", "dict_type"):
        wanted = {
            "string_type": "a string",
            "int_type": "a whole number",
            "float_type": "a number",
            "list_type": "a list",
            "model_type": "a table",
            "dict_type": "a table",
        }[kind]
        return loc, f"must be {wanted} (got {_toml_type(error['input'])})"
    if kind == "too_short":
        return loc, "must name at least one (or be left out)"
    if message.startswith("Input should be "):
        return loc, "must be " + message.removeprefix("Input should be ")
    return loc, message[:1].lower() + message[1:]


def _toml_type(value: object) -> str:
    names = {bool: "a boolean", int: "a whole number", float: "a number", str: "a string", list: "a list"}
    if isinstance(value, Mapping):
        return "a table"
    return names.get(type(value), type(value).__name__)
