"""Every Redis key and channel name humangate uses, built here and nowhere else.

Keys of one Human Function carry its id as a hash tag (``{id}``) so they share a cluster slot.
Global indexes are single keys of their own. humangate's scripts touch one request's keys together
with the global indexes (and RQ's keys) atomically, so it needs one Redis server, not a Cluster
(as RQ does).
"""

from __future__ import annotations

PREFIX = "hg"
"""Namespace of every humangate key, so one Redis can be shared with other applications."""

RESULT_GRACE_SECONDS = 24 * 3600
"""How long an ended Human Function of an API key is kept after its deadline: late clicks still get
a clear "already answered" and the form link still shows the outcome. An anonymous caller's is
kept ``HUMANGATE_ANONYMOUS_KEEP_ENDED`` seconds (``gateway.core.callers.Caller.keep_ended``)."""


HF_PREFIX = f"{PREFIX}:hf:{{"
ATTACH_PREFIX = f"{PREFIX}:attach:{{"
"""Starts of the two per-request key names (scripts complete them with ``<id>}``)."""


def human_function(hf_id: str) -> str:
    """Hash of one Human Function; its fields, and what writes each, are in docs/state-machine.md.
    TTL: its last deadline + max(RESULT_GRACE_SECONDS, the result retention); for an anonymous
    caller's request, ``HUMANGATE_ANONYMOUS_KEEP_ENDED`` instead of RESULT_GRACE_SECONDS."""
    return f"{HF_PREFIX}{hf_id}}}"


def attach(fingerprint: str) -> str:
    """String: the id of the Human Function of one (caller, channel, message, schema), so an
    identical re-call re-attaches instead of posting again. TTL: the function's deadline while it
    is pending; after a person answered it, the result retention (the answer waits for the agent)."""
    return f"{ATTACH_PREFIX}{fingerprint}}}"


RATE_PREFIX = f"{PREFIX}:rate:{{"
OWNED_PENDING_PREFIX = f"{PREFIX}:pending-of:{{"


def rate(identity: str) -> str:
    """Sorted set: the requests one caller identity opened in the last minute (id -> time in ms),
    for ``HUMANGATE_RATE_LIMIT``. TTL: a minute after the last one."""
    return f"{RATE_PREFIX}{identity}}}"


def owned_pending(identity: str) -> str:
    """Sorted set: the pending requests of one caller identity (id -> deadline), for
    ``HUMANGATE_MAX_PENDING``; members leave when their request ends. TTL: the latest deadline."""
    return f"{OWNED_PENDING_PREFIX}{identity}}}"


KEPT_PREFIX = f"{PREFIX}:kept-of:{{"
KEPT_BYTES_PREFIX = f"{PREFIX}:kept-bytes-of:{{"


def kept(identity: str) -> str:
    """Sorted set: what one caller identity keeps in Redis, ``<id>:<bytes>`` (a request) and
    ``<id>:answer:<bytes>`` (its answer) -> when the request's hash expires (ms), for
    ``HUMANGATE_MAX_KEPT_BYTES``; members leave on the next creation after they expired.
    TTL: the latest member's expiry."""
    return f"{KEPT_PREFIX}{identity}}}"


def kept_bytes(identity: str) -> str:
    """String: the sum of the bytes of ``kept(identity)``'s members. TTL: the same as that set's."""
    return f"{KEPT_BYTES_PREFIX}{identity}}}"


PENDING = f"{PREFIX}:pending"
"""Sorted set: id -> deadline of every pending Human Function; the reaper expires what is due.
No TTL: members leave when their function ends."""

EVENTS = f"{PREFIX}:events"
"""Stream: one entry per Human Function that was created (id, created), ended (id, outcome), got its
full deadline (id, deadline) or whose delivery changed (id, note). Every gateway process reads it
with one blocking XREAD, so a waiting call learns of its answer at once and reads nothing else;
after a dropped connection the reader resumes from the last entry it saw, so nothing is lost. Each
open inbox page reads it too (``gateway.inbox.feed``). Trimmed to ``EVENTS_KEEP_SECONDS`` on every
write but a creation's (endings follow creations, so they keep it trimmed)."""

EVENTS_KEEP_SECONDS = 600
"""How far back the events stream reaches: a gateway cut off from Redis for less than this catches
up from the stream alone; after a longer gap it re-reads its waiting requests' states."""

UNSYNCED = f"{PREFIX}:unsynced"
"""Sorted set: id -> time it ended, of Human Functions whose channel message may still show them
as pending. The update job removes its id once the message shows the outcome; workers re-queue
updates for entries left behind by a crash. No TTL: members leave when updated."""


def worker_alive(worker_name: str) -> str:
    """String: present while the RQ worker ``worker_name`` is alive (refreshed every second or two);
    a started job whose worker has no such key was abandoned and is run again.
    TTL: ``workers.recovery.ALIVE_TTL``."""
    return f"{PREFIX}:worker:{worker_name}:alive"


RECOVERY_LOCK = f"{PREFIX}:recovery-lock"
"""String: held for a few seconds by the one worker looking for abandoned jobs, so two workers
never run the same abandoned job again twice. TTL: ``workers.recovery.LOCK_TTL``."""


def mcp_session(session_id: str) -> str:
    """Hash of one 2025-11-25 MCP session (fields: owner, version, params), so that any gateway
    process can serve it (and a restarted one still knows it). TTL: ``gateway.mcp.sessions.SESSION_TTL``,
    refreshed while the session is used."""
    return f"{PREFIX}:mcp-session:{{{session_id}}}"


def session_tool_rules(session_id: str) -> str:
    """Set of the tool rules "Allow for this session" added on one 2025-11-25 MCP session
    (``Bash(npm test)``, ``mcp__github__x``), so a client that ignores ``updatedPermissions`` is not
    asked again (docs/permissions.md#allow-for-this-session). TTL: ``SESSION_TTL`` of
    ``gateway.mcp.session_registry``, from the last rule added."""
    return f"{PREFIX}:session-tools:{{{session_id}}}"


def mcp_sessions_of(owner: str) -> str:
    """Sorted set: the open 2025-11-25 MCP sessions of one caller identity (id -> expiry in ms),
    which caps how many one caller keeps, plus the slots reserved for sessions being opened
    (``opening:<token>`` -> the end of ``gateway.mcp.session_registry.OPENING_LEASE``).
    TTL: ``gateway.mcp.session_registry.SESSION_TTL`` after the last."""
    return f"{PREFIX}:mcp-sessions-of:{{{owner}}}"


def mcp_asking(session_id: str) -> str:
    """String: the inbox of the gateway process waiting for the client's reply on one 2025-11-25
    session (a form it asked in the client), so a reply posted to another process is carried there.
    TTL: until the request's deadline."""
    return f"{PREFIX}:mcp-asking:{{{session_id}}}"


def mcp_inbox(inbox: str) -> str:
    """List: replies carried to one gateway process, oldest first, popped by it
    (``gateway.mcp.replies``). TTL: ``replies.INBOX_KEEP_SECONDS`` after the last reply pushed."""
    return f"{PREFIX}:mcp-inbox:{inbox}"


API_KEYS = f"{PREFIX}:apikeys"
"""Hash: sha256(key) -> JSON {name, created}. No TTL: keys live until revoked."""


def seen_callback(channel: str, digest: str) -> str:
    """String: marks one signed platform callback as applied, so a replay of it (same signature,
    still inside the platform's freshness window) is acknowledged but not applied again.
    TTL: that window plus a margin (``gateway.core.replay``)."""
    return f"{PREFIX}:seen:{channel}:{digest}"


def channel_position(channel: str, stream: str) -> str:
    """String: how far one channel has read a stream of its platform across every process (Telegram:
    the next ``getUpdates`` offset of one bot, ``stream`` = ``updates:<bot id>``), so whoever polls
    next neither skips nor repeats an update. TTL: ``gateway.core.replay.POSITION_TTL`` from the last
    move (the platform forgets unconfirmed updates sooner)."""
    return f"{PREFIX}:position:{channel}:{stream}"


def discord_draft(hf_id: str, user_id: str) -> str:
    """String: JSON of what one Discord user has typed so far in a Human Function's form (earlier
    steps of a long form, or an answer refused as invalid, shown again to fix).
    TTL: until the function's deadline (``gateway.drafts``)."""
    return f"{PREFIX}:discord:draft:{{{hf_id}}}:{user_id}"


def task(hf_id: str, digest: str) -> str:
    """Hash of one MCP task (docs/tools.md#tasks): who created it, for which tool, and what the client's form
    has done so far; its status and result are read from the Human Function ``hf_id`` itself, so any
    process serves it and it survives a restart. ``digest`` is a hash of the task id (the id itself, a
    bearer capability, is never a key name). TTL: the function's deadline + ``RESULT_GRACE_SECONDS``,
    like the function's own hash (``gateway.mcp.task_store``)."""
    return f"{PREFIX}:task:{{{hf_id}}}:{digest}"


def inbox_session(digest: str) -> str:
    """Hash of one inbox sign-in (fields: operator, key, csrf, created), found by a hash of its
    cookie (the cookie itself, a bearer secret, is never a key name).
    TTL: ``gateway.inbox.sessions.SESSION_SECONDS`` from sign-in."""
    return f"{PREFIX}:inbox-session:{digest}"


def inbox_streams(holder: str) -> str:
    """Sorted set: stream id -> lease end, of the open live-update streams (``/inbox/events``) of one
    signed-in holder (``operator:alice``, ``email:ada@example.com``),
    so that their number is bounded across every gateway process. TTL: the latest lease, renewed while
    a stream is open (``gateway.inbox.sessions.STREAM_LEASE_SECONDS``)."""
    return f"{PREFIX}:inbox-streams:{holder}"


def web_session(digest: str) -> str:
    """Hash of one web sign-in through the OIDC provider (fields: email, name, created), found by a
    hash of its cookie (the cookie itself, a bearer secret, is never a key name).
    TTL: ``gateway.signin.sessions.SESSION_SECONDS`` from sign-in."""
    return f"{PREFIX}:web-session:{digest}"


def web_sign_in(digest: str) -> str:
    """Hash of one sign-in under way at the OIDC provider (fields: browser, verifier, nonce, next),
    found by a hash of its ``state``; read and deleted at once by the callback, so it is used once.
    TTL: ``gateway.signin.sessions.SIGN_IN_SECONDS``."""
    return f"{PREFIX}:web-sign-in:{digest}"


WEBHOOK_EVENT_PREFIX = f"{PREFIX}:webhook-event:"
WEBHOOK_DELIVERY_PREFIX = f"{PREFIX}:webhook-delivery:"


def webhook_event(event_id: str) -> str:
    """String: the body of one webhook event, written once so every attempt sends the same bytes.
    TTL: ``gateway.core.webhook_store.kept_seconds`` (the retry schedule plus the failed grace);
    ``DELIVERED_KEEP`` once every delivery of the event is delivered."""
    return f"{WEBHOOK_EVENT_PREFIX}{event_id}"


def webhook_delivery(delivery_id: str) -> str:
    """Hash of one event's delivery to one URL (fields: event, type, url, state, attempts, error,
    code, created, updated, claim). TTL: as its event's body, renewed by a redrive; ``DELIVERED_KEEP``
    once delivered."""
    return f"{WEBHOOK_DELIVERY_PREFIX}{delivery_id}"


def webhook_event_left(event_id: str) -> str:
    """Integer: the deliveries of one event not delivered yet; at 0 its body is kept only
    ``gateway.core.webhook_store.DELIVERED_KEEP`` more. TTL: as the event's body."""
    return f"{WEBHOOK_EVENT_PREFIX}{event_id}:left"


WEBHOOKS_DUE = f"{PREFIX}:webhooks-due"
"""Sorted set: delivery id -> when its next attempt is due (a claimed one: when its claim lapses).
No TTL: members leave when their delivery is delivered, gone or failed."""

WEBHOOKS_FAILED = f"{PREFIX}:webhooks-failed"
"""Sorted set: delivery id -> when it failed (or was gone), for ``humangate webhooks failed`` and
``redrive``. No TTL: members whose delivery hash expired are dropped when listed."""


SCHEDULE = f"{PREFIX}:schedule"
"""Sorted set: ``<kind>:<id>:<arg>`` -> when it is due (seconds since the epoch), of every step,
reminder (and any other kind of work a worker does later) not fired yet (``gateway.core.schedule``).
No TTL: members leave when a worker fires them, or when their request has ended by then."""


AUDIT_PREFIX = f"{PREFIX}:audit:{{"


def audit(hf_id: str) -> str:
    """List: the audit trail of one Human Function, one compact JSON event per entry, appended only
    (``gateway.core.audit``). TTL: ``HUMANGATE_AUDIT_RETENTION`` days after its last event."""
    return f"{AUDIT_PREFIX}{hf_id}}}"


AUDIT_INDEX = f"{PREFIX}:audit-index"
"""Sorted set: id -> time of its trail's last event (seconds), so an export by time range reads only
the trails it needs. No TTL: members older than the retention leave on each new request."""

METRIC_TIMES = f"{PREFIX}:metrics:time-to-answer"
"""Hash: ``humangate_time_to_answer_seconds`` of every process, ``<channel>\\t<policy>\\t<outcome>\\t<field>``
-> count (a bucket's index, or ``count``) or sum of seconds (``sum``), written by the scripts that end
requests (``gateway.core.metrics``). No TTL: counters live as long as Redis does."""

METRIC_COUNTS = f"{PREFIX}:metrics:counts"
"""Hash: the counters that worker and gateway processes share, ``<metric>\\t<label value>`` -> count
(``gateway.core.metrics.count``). No TTL: counters live as long as Redis does."""


def lease(slot: str) -> str:
    """Hash: who holds one connection slot (``slack:0``, ``discord:0``, ``telegram:0``): token, host,
    pid, since, activity (``gateway.core.lease``). TTL: ``gateway.core.lease.LEASE_TTL``, renewed by
    its holder."""
    return f"{PREFIX}:lease:{slot}"


def lease_candidates(platform: str) -> str:
    """Sorted set: the processes that may hold one platform's slots (token -> listed until, ms), so
    a process holding several gives one to a process holding none.
    TTL: three acquire intervals (``gateway.core.lease.LeaseTiming``), refreshed by every look."""
    return f"{PREFIX}:lease-candidates:{platform}"
