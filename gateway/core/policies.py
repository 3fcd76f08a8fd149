"""The policy file of this installation, and what a policy does to a new request: its timeout,
channels, target and limits in place of the caller's tier (docs/policies.md#applying).

Without a policy file nothing here changes a request: the caller's ``uiType`` (or the default
channel), the channel's configured target, and the caller's own timeout and limits.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from channels.registry import configured_channels, default_channel
from gateway.core.callers import Caller
from gateway.core.webhooks import url_mistakes
from schemas.errors import InvalidRequestError, PolicyRefusedError
from schemas.policies import Mistake, Policies, Policy, PolicyFileError, parse_policies
from schemas.settings import Settings

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


def startup_policies(settings: Settings) -> tuple[Policies, str | None]:
    """The policies ``serve`` and ``worker`` start with, and why they must not start (``None``: they
    may): the file has mistakes, or a webhook URL reaches a private address (docs/webhooks.md).
    Warnings about webhook URLs are logged."""
    try:
        policies = load_policies(settings)
    except PolicyFileError as exc:
        return Policies(), f"{exc}\n(check it with: humangate policy check)"
    refused, warnings = url_mistakes(policies, settings)
    for warning in warnings:
        logger.warning("%s", warning)
    if not refused:
        return policies, None
    reasons = "\n".join(f"  webhooks[{index}].url: {reason}" for index, reason in refused)
    return policies, f"{policies.source}:\n{reasons}"


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
    policy = _policy_of(policies, caller, name)
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


def _policy_of(policies: Policies, caller: Caller, name: str | None) -> Policy | None:
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
