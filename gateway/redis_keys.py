"""Every Redis key and channel name humangate uses, built here and nowhere else.

Keys of one Human Function carry its id as a hash tag (``{id}``) so they share a cluster slot and
one Lua script may touch them all. Global indexes are single keys of their own.
"""

from __future__ import annotations

PREFIX = "hg"
"""Namespace of every humangate key, so one Redis can be shared with other applications."""

RESULT_GRACE_SECONDS = 24 * 3600
"""How long an ended Human Function is kept after its deadline: late clicks still get a clear
"already answered" and the form link still shows the outcome."""


def human_function(hf_id: str) -> str:
    """Hash of one Human Function (fields: doc, status, deadline, fingerprint, outcome, refs,
    delivery_error, attempts).
    TTL: deadline + RESULT_GRACE_SECONDS."""
    return f"{PREFIX}:hf:{{{hf_id}}}"


def attach(fingerprint: str) -> str:
    """String: the id of the pending Human Function for one (caller, channel, message, schema), so an
    identical re-call re-attaches instead of posting again. TTL: the deadline of that function."""
    return f"{PREFIX}:attach:{{{fingerprint}}}"


PENDING = f"{PREFIX}:pending"
"""Sorted set: id -> deadline of every pending Human Function; the reaper expires what is due.
No TTL: members leave when their function ends."""

EVENTS = f"{PREFIX}:events"
"""Pub/sub channel: the id of every Human Function that just ended, to wake its waiting calls."""

API_KEYS = f"{PREFIX}:apikeys"
"""Hash: sha256(key) -> JSON {name, created}. No TTL: keys live until revoked."""


def seen_callback(channel: str, digest: str) -> str:
    """String: marks one signed platform callback as applied, so a replay of it (same signature,
    still inside the platform's freshness window) is acknowledged but not applied again.
    TTL: that window plus a margin (``gateway.replay``)."""
    return f"{PREFIX}:seen:{channel}:{digest}"


def discord_draft(hf_id: str, user_id: str) -> str:
    """String: JSON of what one Discord user has typed so far in a Human Function's form (earlier
    steps of a long form, or an answer refused as invalid, shown again to fix).
    TTL: until the function's deadline (``gateway.inbound.discord.drafts``)."""
    return f"{PREFIX}:discord:draft:{{{hf_id}}}:{user_id}"
