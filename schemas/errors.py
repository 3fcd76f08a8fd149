"""The one exception tree of humangate.

    HumangateError
     ├── InvalidSchemaError       the caller's schema breaks a flat-schema rule
     ├── InvalidAnswerError       a person's answer does not satisfy the schema
     ├── InvalidRequestError      a caller's arguments are malformed (bad field, too large)
     │    └── InvalidJsonError        a body is not JSON within bounds (encoding, nesting, numbers)
     ├── AuthError                a wrong API key, or anonymous where auth is required
     ├── SignatureError           an inbound callback is not signed as the platform signs
     ├── SignInError              a web sign-in through the OIDC provider did not prove who someone is
     ├── NotConfiguredError       a channel was asked for but its settings are missing
     ├── PolicyRefusedError       a policy refuses the request (not the caller's, or not its channel)
     │    └── NotAnApproverError      whoever answered is not one of the request's approvers
     ├── PolicyFileError          the policy file has mistakes (``schemas.policies``)
 ├── ToolRuleError            a tool permission rule is malformed (``schemas.tool_rules``)
     ├── UnknownRequestError      no Human Function with that id or token
     ├── ClosedError              the Human Function already ended
     │    ├── AlreadyAnsweredError    someone answered first
     │    └── ExpiredError            the deadline passed
     ├── RateLimitedError         a caller is past one of its limits (retry after some seconds)
     ├── StoreUnavailableError    Redis cannot be reached right now (retry in a few seconds)
     └── DeliveryError            a channel could not deliver or update (``retryable``)

Every message names the field and the rule, so it can be shown to a person or an agent as is.
The HTTP status of each class is mapped in one place (``gateway.errors``).
"""

from __future__ import annotations

from dataclasses import dataclass

RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of a 503 while Redis is unavailable (a restart usually takes about this long)."""


class HumangateError(Exception):
    """Base of every error humangate raises on purpose."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule at one place: ``path`` is dotted (``properties.user``), empty for the root."""

    path: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}" if self.path else self.rule


class InvalidSchemaError(HumangateError):
    """The schema breaks one or more flat-schema rules; all of them are reported at once."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("Invalid schema: " + "; ".join(str(v) for v in violations))


class InvalidAnswerError(HumangateError):
    """An answer breaks the schema; ``errors`` maps each field name ('' for the form) to a reason."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("Invalid answer: " + "; ".join(f"{k or 'form'}: {v}" for k, v in errors.items()))


class InvalidRequestError(HumangateError):
    """The caller's arguments are malformed; the message names the field and the rule."""


class InvalidJsonError(InvalidRequestError):
    """A body is not JSON humangate reads (``schemas.json_text``); ``rule`` says why, the message
    names the body: ``body: is nested deeper than 64 levels``."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        super().__init__(f"body: {rule}")


class AuthError(HumangateError):
    """The caller presented a wrong key, or none where one is required."""


class SignatureError(HumangateError):
    """An inbound callback failed signature verification (missing, malformed, stale or wrong)."""


class SignInError(HumangateError):
    """A web sign-in was refused: a stale or forged ``state``, an ID token that does not verify
    (signature, issuer, audience, expiry, nonce), an unverified email, or a provider that failed."""


class NotConfiguredError(HumangateError):
    """A channel was requested that has no settings; the message names the configured ones."""


class PolicyRefusedError(HumangateError):
    """A policy refuses the request: a channel it does not allow, or a policy named that does not
    apply to the caller (docs/policies.md#applying); the message names why and what is allowed."""


class NotAnApproverError(PolicyRefusedError):
    """Whoever tried to answer is not one of the request's approvers; nothing changed."""


class ToolRuleError(HumangateError, ValueError):
    """A tool permission rule (``Bash(npm test *)``) that is not one; the message names the rule
    and what is wrong. A ``ValueError`` too, so the policy file's checker reports it at its line."""


class UnknownRequestError(HumangateError):
    """No Human Function matches the id or token (never created, or its keys expired)."""


class ClosedError(HumangateError):
    """The Human Function already reached a terminal state; nothing was changed."""


class AlreadyAnsweredError(ClosedError):
    """Someone answered first; the message says who."""


class ExpiredError(ClosedError):
    """The deadline passed before this answer arrived."""


class ApprovalRefusedError(ClosedError):
    """An answer that cannot count on a request needing several approvals: the person approved it
    already, or it is someone else's turn (docs/policies.md#approvals); nothing changed. A
    ``ClosedError``, so every channel tells the person privately, as it tells a late answer."""

    def __init__(self, message: str, turn: int | None = None) -> None:
        super().__init__(message)
        self.turn = turn
        """Out of turn: how many approvals were recorded (the index of the approver whose turn it is)."""


class RateLimitedError(HumangateError):
    """The caller is past one of its limits (docs/callers.md#limits); nothing was opened."""

    def __init__(self, which: str, limit: str, retry_after: int) -> None:
        self.which = which
        """``rate`` (new requests per minute), ``pending`` (requests pending at once) or ``kept``
        (bytes kept in Redis at once)."""
        self.limit = limit
        """Which limit, in words: ``at most 20 new requests per minute``."""
        self.retry_after = retry_after
        """Seconds until the same call would be accepted."""
        super().__init__(f"Rate limit exceeded: {limit}; retry after {retry_after} seconds")


class StoreUnavailableError(HumangateError):
    """Redis did not answer (down, restarting, unreachable or too slow); nothing was changed that
    the caller cannot safely repeat. Retryable: the same call a few seconds later is correct."""


class DeliveryError(HumangateError):
    """A channel failed to post or update its message; ``retry_after``: seconds the platform asked
    to wait before the next attempt (a 429's), which a retried job waits at least."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(message)
