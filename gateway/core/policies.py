"""The policy file of this installation, and what a policy does to a new request: its timeout,
channels, target and limits in place of the caller's tier (docs/policies.md#applying).

Without a policy file nothing here changes a request: the caller's ``uiType`` (or the default
channel), the channel's configured target, and the caller's own timeout and limits.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from channels.registry import CHANNELS, channel_names, configured_channels, default_channel
from gateway.core import redis_keys as keys
from gateway.core.callers import Caller, key_names, operator_names
from gateway.core.redis_client import is_unavailable, sync_redis
from gateway.core.redis_target import RedisTarget
from gateway.core.webhooks import url_checks
from schemas.errors import InvalidRequestError, PolicyRefusedError
from schemas.policies import Mistake, Policies, Policy, PolicyFileError, parse_policies, sorted_mistakes
from schemas.settings import Settings
from schemas.toml_lines import KeyLines
from schemas.webhooks import webhook_lines

logger = logging.getLogger(__name__)

DEFAULT_POLICY_FILE = Path("humangate.toml")
"""The policy file read when ``HUMANGATE_POLICY_FILE`` is unset, if it exists (relative to the
working directory)."""

NOT_THE_CALLERS = "policy: policy {policy!r} does not apply to caller {caller!r}"
"""Why a REST create naming a policy that does not list its caller is refused (403)."""

UNKNOWN_POLICY = "policy: no policy named {policy!r}"
"""Why a REST create naming a policy the file does not have is refused (422)."""

CHANNEL_NOT_ALLOWED = (
    "uiType: policy {policy!r} does not allow channel {channel!r}; allowed channels: {allowed}"
)
"""Why a request on a channel its policy does not list is refused (MCP tool error, REST 403)."""


def policy_path(settings: Settings) -> Path | None:
    """``HUMANGATE_POLICY_FILE``, else ``./humangate.toml`` when it exists, else ``None``."""
    if settings.policy_file is not None:
        return settings.policy_file
    return DEFAULT_POLICY_FILE if DEFAULT_POLICY_FILE.is_file() else None


def read_policies(path: Path) -> Policies:
    """The policies of the file at ``path``; ``PolicyFileError`` when it cannot be read or used."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PolicyFileError(str(path), [Mistake(None, "", "there is no such file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        rule = f"cannot be read ({type(exc).__name__}: {exc})"
        raise PolicyFileError(str(path), [Mistake(None, "", rule)]) from None
    return parse_policies(text, str(path))


def load_policies(settings: Settings) -> Policies:
    """This installation's policies (none without a policy file); ``PolicyFileError`` when the file
    is invalid, so that a gateway never runs with half a policy."""
    path = policy_path(settings)
    return Policies() if path is None else read_policies(path)


OPERATOR_PREFIX = "operator:"
"""How an approver names an operator key (``operator:<key name>``)."""


@dataclass(frozen=True, slots=True)
class FileCheck:
    """What ``policy check``, ``serve`` and ``worker`` know of a policy file: every mistake (the
    file's own, and webhook URLs of private addresses) and every warning, each with its line."""

    source: str
    policies: Policies
    """The file's policies; empty when it has mistakes."""
    mistakes: list[Mistake]
    warnings: list[Mistake]
    lines: KeyLines = field(default_factory=lambda: KeyLines(""))

    def refusal(self) -> str | None:
        """Why ``serve`` and ``worker`` must not start with this file (``None``: they may): each
        mistake as ``policy check`` prints it."""
        if not self.mistakes:
            return None
        listed = "\n".join(mistake.at(self.source) for mistake in self.mistakes)
        count = len(self.mistakes)
        return f"{self.source} has {count} mistake(s):\n{listed}\n(check it with: humangate policy check)"

    def operator_warnings(self, operators: set[str], callers: frozenset[str] = frozenset()) -> list[Mistake]:
        """``operator:<name>`` approvers (of a policy or a step) naming no operator key of
        ``operators``: nobody can answer as them. The hint fits what exists: a name of a caller key
        (``callers``) cannot be made an operator's until that key is revoked (a name is one key)."""
        found = []
        for policy in self.policies.policies:
            places: list[tuple[tuple[str | int, ...], str]] = [
                (("policies", policy.name, "approvers", index), name)
                for index, name in enumerate(policy.approvers)
            ]
            for step_index, step in enumerate(policy.steps):
                places += [
                    (("policies", policy.name, "steps", step_index, "approvers", index), name)
                    for index, name in enumerate(step.approvers)
                ]
            for place, name in places:
                key = name.removeprefix(OPERATOR_PREFIX)
                if name.startswith(OPERATOR_PREFIX) and key not in operators:
                    rule = (
                        f"{name!r} names a caller key, not an operator key, so nobody can answer as it "
                        f"(a name is one key: humangate keys revoke {key}, then humangate keys create "
                        f"{key} --operator; or name an operator key)"
                        if key in callers
                        else f"{name!r} names no operator key, so nobody can answer as it "
                        f"(humangate keys create {key} --operator makes one)"
                    )
                    found.append(Mistake(self.lines.line_of(place), _field(place), rule))
        return found

    def names_operators(self) -> bool:
        """Whether any approver is an ``operator:`` one."""
        return any(
            name.startswith(OPERATOR_PREFIX)
            for policy in self.policies.policies
            for name in [*policy.approvers, *(a for step in policy.steps for a in step.approvers)]
        )


def check_file(path: Path, settings: Settings) -> FileCheck:
    """Every mistake and warning of the policy file at ``path`` (``HUMANGATE_WEBHOOK_ALLOW_PRIVATE``
    allows every webhook URL). Webhook URLs are checked even when the file has other mistakes."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return FileCheck(source, Policies(), [Mistake(None, "", "there is no such file")], [])
    except (OSError, UnicodeDecodeError) as exc:
        rule = f"cannot be read ({type(exc).__name__}: {exc})"
        return FileCheck(source, Policies(), [Mistake(None, "", rule)], [])
    mistakes: list[Mistake] = []
    policies = Policies()
    try:
        policies = parse_policies(text, source)
    except PolicyFileError as exc:
        mistakes += exc.mistakes
    refused, warned = _url_checks(text, settings)
    lines = KeyLines(text)
    warnings = warned + _thread_warnings(policies, lines)
    mistakes = sorted_mistakes(mistakes + refused)
    return FileCheck(source, Policies() if mistakes else policies, mistakes, sorted_mistakes(warnings), lines)


def _url_checks(text: str, settings: Settings) -> tuple[list[Mistake], list[Mistake]]:
    """Each webhook URL refused (a private address) and warned about, from the file as written."""
    try:
        hooks = tomllib.loads(text).get("webhooks")
    except tomllib.TOMLDecodeError:
        return [], []
    urls = [
        (index, hook["url"])
        for index, hook in enumerate(hooks if isinstance(hooks, list) else [])
        if isinstance(hook, Mapping) and isinstance(hook.get("url"), str) and "://" in hook["url"]
    ]
    tables = webhook_lines(text)

    def at(index: int, rule: str) -> Mistake:
        line = tables[index].get("url", tables[index][""]) if index < len(tables) else None
        return Mistake(line, f"webhooks[{index}].url", rule)

    refused, warnings = url_checks(urls, settings)
    return [at(index, rule) for index, rule in refused], [at(index, rule) for index, rule in warnings]


def _thread_warnings(policies: Policies, lines: KeyLines) -> list[Mistake]:
    """``remind`` on a policy none of whose channels posts: there is no thread to remind in."""
    found = []
    for policy in policies.policies:
        allowed: list[str] = list(policy.channels or channel_names())
        if policy.remind and not any(CHANNELS[channel].posts for channel in allowed):
            place = ("policies", policy.name, "remind")
            found.append(
                Mistake(
                    lines.line_of(place),
                    _field(place),
                    f"{', '.join(allowed)} posts nothing, so there is no thread to remind in: "
                    "no reminder is ever sent",
                )
            )
    return found


def _field(place: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(place))


def startup_check(settings: Settings) -> FileCheck:
    """The policy file ``serve`` and ``worker`` start with (none: an empty check); its warnings are
    logged, each with its line. ``refusal()`` says why they must not start."""
    path = policy_path(settings)
    if path is None:
        return FileCheck("", Policies(), [], [])
    checked = check_file(path, settings)
    for warning in checked.warnings:
        logger.warning("%s", warning.at(checked.source, "warning: "))
    return checked


def startup_policies(settings: Settings) -> tuple[Policies, str | None]:
    """The policies ``serve`` and ``worker`` start with, and why they must not start (``None``: they
    may): every mistake of the file, as ``policy check`` prints them (its own, and webhook URLs of
    private addresses, docs/webhooks.md)."""
    checked = startup_check(settings)
    return checked.policies, checked.refusal()


def stored_key_names(target: RedisTarget) -> tuple[set[str], frozenset[str]] | None:
    """The names of the operator keys and of the caller keys stored in the Redis at ``target``;
    ``None`` when it does not answer."""
    try:
        with sync_redis(target) as client:
            records = client.hgetall(keys.API_KEYS)
            operators = operator_names(records)
            return operators, frozenset(key_names(records) - operators)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        return None


def log_operator_warnings(checked: FileCheck, target: RedisTarget) -> None:
    """At start, once Redis answers: a warning for each ``operator:<name>`` approver naming no
    operator key (nothing when Redis does not answer: the keys cannot be read)."""
    names = stored_key_names(target) if checked.names_operators() else None
    for warning in checked.operator_warnings(*names) if names is not None else []:
        logger.warning("%s", warning.at(checked.source, "warning: "))


@dataclass(frozen=True, slots=True)
class Applied:
    """What a new request gets from its caller and its policy (if one applies)."""

    policy: Policy | None
    channel: str
    target: str | None
    """Where its channel posts it, instead of the channel's configured default (``None``: there)."""
    timeout: float
    rate_limit: int
    max_pending: int


def apply_policy(
    policies: Policies, caller: Caller, channel: str | None, settings: Settings, name: str | None = None
) -> Applied:
    """The policy of a new request and what it sets. ``channel`` is the caller's ``uiType``
    (``None``: the default channel, or the policy's first configured channel when it does not allow
    the default); ``name`` is the policy a REST caller named (else its first matching policy)."""
    policy = policy_of(policies, caller, name)
    chosen = channel or _default_of(policy, settings)
    if policy is not None and policy.channels is not None and chosen not in policy.channels:
        raise PolicyRefusedError(
            CHANNEL_NOT_ALLOWED.format(policy=policy.name, channel=chosen, allowed=", ".join(policy.channels))
        )
    if policy is None:
        return Applied(
            None,
            chosen,
            None,
            caller.timeout(settings),
            caller.rate_limit(settings),
            caller.max_pending(settings),
        )
    first = policy.steps[0] if policy.steps and policy.steps[0].channel == chosen else None
    return Applied(
        policy,
        chosen,
        policy.target_of(first) if first is not None else policy.targets.of(chosen),
        policy.timeout if policy.timeout is not None else caller.timeout(settings),
        policy.rate_limit if policy.rate_limit is not None else caller.rate_limit(settings),
        policy.max_pending if policy.max_pending is not None else caller.max_pending(settings),
    )


def policy_of(policies: Policies, caller: Caller, name: str | None = None) -> Policy | None:
    """The policy a request of ``caller`` opens under: ``name`` (which must apply to the caller),
    else its first matching one."""
    if name is None:
        return policies.first_for(caller.name, caller.authenticated)
    policy = policies.named(name)
    if policy is None:
        raise InvalidRequestError(UNKNOWN_POLICY.format(policy=name))
    if not policy.applies_to(caller.name, caller.authenticated):
        raise PolicyRefusedError(NOT_THE_CALLERS.format(policy=name, caller=caller.name))
    return policy


def _default_of(policy: Policy | None, settings: Settings) -> str:
    """The channel of a request without ``uiType``: the default one, unless its policy does not
    allow it; then the first channel of the policy that is configured (else its first). A policy
    with steps posts first where its first step says."""
    if policy is not None and policy.steps:
        return policy.steps[0].channel  # the first step is the first post
    default = default_channel(settings)
    if policy is None or policy.channels is None or default in policy.channels:
        return default
    configured = configured_channels(settings)
    return next((c for c in policy.channels if c in configured), policy.channels[0])
