"""The rule every list of names in the policy file follows (callers, channels, approvers, mentions,
webhook events): each name appears once."""

from __future__ import annotations


def unique(values: list[str]) -> list[str]:
    """``values`` unchanged; ``ValueError`` naming each name listed more than once."""
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"names {', '.join(repeated)} more than once")
    return values
