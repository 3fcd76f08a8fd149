"""The Lua scripts of the store, one named constant each, and the shape of their arguments.

Each runs atomically in Redis, so a request is never stored without its delivery job, never ends
twice, and never ends without its event being written. Which script makes which transition, and
every hash field each one writes, is drawn in ``docs/state-machine.md``.

Every script takes its arguments as one JSON object in ``ARGV[1]`` (the ``...Args`` typed dict next
to it says what each member means). Times that are stored as they are (deadlines, ``ended_at``)
travel as their decimal text, so the hash keeps exactly what Python wrote. Scripts that enqueue RQ
jobs also take the commands RQ itself would have run (recorded by ``gateway.core.queue``), binary job
data included, from ``ARGV[2]`` on: each as its argument count followed by its arguments, run by
``run_commands``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import NotRequired, TypedDict


def json_argument(args: Mapping[str, object]) -> str:
    """A script's ``ARGV[1]``: its typed dict as compact JSON. UTF-8 goes as it is: cjson copies it
    byte for byte, so the hash keeps exactly what Python wrote."""
    return json.dumps(args, separators=(",", ":"), ensure_ascii=False)


EVENTS_MIN_ID = """
local function events_min_id(keep_seconds)
  local now = redis.call('TIME')
  return string.format('%d-0', (tonumber(now[1]) - tonumber(keep_seconds)) * 1000)
end
"""
"""Lua helper: the oldest events-stream id to keep, from Redis's own clock (never the caller's: a
gateway whose clock runs ahead must not trim away the events it writes)."""

RUN_COMMANDS = """
local function run_commands(args, from, last)
  local i = from
  while i <= (last or #args) do
    local n = tonumber(args[i])
    local command = {}
    for j = 1, n do command[j] = args[i + j] end
    redis.call(unpack(command))
    i = i + n + 1
  end
end
"""
"""Lua helper: run the recorded commands found in ``args`` from index ``from`` on (up to index
``last``, when given; else to the end)."""

EXPIRED_OUTCOME = """
local function expired_outcome(template, reason, action)
  local generic, cancel = template.reason, template.action
  template.reason = reason or generic
  template.action = action or cancel
  local outcome = cjson.encode(template)
  template.reason, template.action = generic, cancel
  return outcome
end
"""
"""Lua helper: the expired outcome, as JSON. ``template`` is the one Python built for this moment
(``schemas.results.expired_outcome``); only its reason and action are replaced, by the request's own
(stored when it was created or started: ``expire_action`` is ``decline`` under a policy with
``on_timeout = "decline"``). A hash without them keeps the template's generic reason and cancel."""

WITH_APPROVALS = """
local function with_approvals(key, outcome)
  if not redis.call('HGET', key, 'needed') then return outcome end
  local count = tonumber(redis.call('HGET', key, 'approval_count') or '0')
  local entries = {}
  for i = 1, count do entries[i] = redis.call('HGET', key, 'approval:' .. i) end
  return string.sub(outcome, 1, -2) .. ',"approvals":[' .. table.concat(entries, ',') .. ']}'
end
"""
"""Lua helper: the outcome JSON of a request that counts approvals (its hash has ``needed``) with
``"approvals": [...]`` added, each approval's JSON as Python wrote it (so its content keeps its key
order); any other outcome as it is. ``outcome`` is a JSON object without an ``approvals`` key."""


KEPT_BYTES = """
local function release_kept(members, total, now)
  local kept = tonumber(redis.call('GET', total) or '0')
  local gone = redis.call('ZRANGEBYSCORE', members, '-inf', now)
  if #gone == 0 then return kept end
  for _, member in ipairs(gone) do kept = kept - tonumber(string.match(member, '(%d+)$')) end
  if kept < 0 then kept = 0 end
  redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
  if redis.call('ZCARD', members) == 0 then
    redis.call('DEL', total)
    return 0
  end
  redis.call('SET', total, kept, 'KEEPTTL')
  return kept
end

local function kept_room_at(members, needed)
  local released, from = 0, 0
  while true do
    local batch = redis.call('ZRANGE', members, from, from + 99, 'WITHSCORES')
    if #batch == 0 then return 0 end
    for i = 1, #batch, 2 do
      released = released + tonumber(string.match(batch[i], '(%d+)$'))
      if released >= needed then return tonumber(batch[i + 1]) end
    end
    from = from + 100
  end
end

local function keep_bytes(members, total, expiry, name, size)
  redis.call('ZADD', members, expiry, name .. ':' .. size)
  redis.call('INCRBY', total, size)
  local last = redis.call('ZRANGE', members, -1, -1, 'WITHSCORES')[2]
  redis.call('PEXPIREAT', members, last)
  redis.call('PEXPIREAT', total, last)
end
"""
"""Lua helpers of a caller's kept-bytes budget: a sorted set of ``<name>:<bytes>`` members scored
by when the keys holding those bytes expire (ms since epoch), and their total. ``release_kept``
drops what has expired by ``now`` and returns the total still kept; ``kept_room_at`` is when at
least ``needed`` bytes will have been released; ``keep_bytes`` counts ``size`` more bytes until
``expiry``. Both keys live as long as their latest member."""


AUDIT = """
local function audit(key, index, keep_ms, id, at, event)
  redis.call('RPUSH', key, event)
  redis.call('PEXPIRE', key, keep_ms)
  redis.call('ZADD', index, at, id)
end

local function expired_event(at, reason)
  return cjson.encode({event = 'ended', at = tonumber(at), outcome = 'expired', reason = reason})
end

local function count_answer(key, buckets, doc, status, at)
  local d = cjson.decode(doc)
  local seconds = tonumber(at) - tonumber(d.created_at)
  if seconds < 0 then seconds = 0 end
  local policy = d.policy
  if type(policy) ~= 'string' then policy = '' end
  local prefix = d.channel .. '\\t' .. policy .. '\\t' .. status .. '\\t'
  local le = '+Inf'
  for _, bound in ipairs(buckets) do
    if seconds <= tonumber(bound) then
      le = bound
      break
    end
  end
  redis.call('HINCRBY', key, prefix .. le, 1)
  redis.call('HINCRBYFLOAT', key, prefix .. 'sum', string.format('%.3f', seconds))
end
"""
"""Lua helpers of the audit trail and the shared metrics: ``audit`` appends one event to a trail
(kept ``keep_ms`` after it) and moves the trail's place in the time index; ``expired_event`` is the
``ended`` event of a request its deadline ended; ``count_answer`` counts one ending in
``humangate_time_to_answer_seconds`` (``gateway.core.metrics``), from the request's ``doc``."""


class CreateArgs(TypedDict):
    """``ARGV[1]`` of ``CREATE``."""

    id: str
    doc: str
    """The request's JSON (``gateway.core.store``), stored as the ``doc`` field."""
    deadline: str
    """When it ends unless answered (seconds since epoch, as text)."""
    fingerprint: str
    expire_reason: str
    """Why it ends at ``deadline``."""
    full_deadline: NotRequired[str]
    """Only with an idle timeout: the deadline it gets once a person starts answering."""
    full_expire_reason: NotRequired[str]
    """Why it ends at ``full_deadline``."""
    owner: str
    hash_expiry_ms: int
    """When the hash itself goes (ms since epoch): its last deadline plus the grace or retention."""
    attach_expiry_ms: int
    """When the attach key goes (ms since epoch): its deadline."""
    hf_prefix: str
    """``redis_keys.HF_PREFIX``, to name the hash of a request re-attached to."""
    per_minute: int
    """New requests the owner may open per minute."""
    pending: int
    """Requests the owner may have pending at once."""
    now_ms: int
    kept_budget: int
    """Bytes the owner may keep in Redis at once."""
    kept_size: int
    """Bytes this request keeps (its JSON, its fingerprint and an overhead per request)."""
    needed: NotRequired[int]
    """Only for a request that counts approvals: how many distinct approvers must accept."""
    expire_action: NotRequired[str]
    """Only under ``on_timeout = "decline"``: ``decline``, the action its timeout ends with."""
    audit_event: str
    """Its ``created`` event (``gateway.core.audit``)."""
    audit_keep_ms: int
    """How long its trail is kept after its last event."""


CREATE = (
    RUN_COMMANDS
    + KEPT_BYTES
    + AUDIT
    + """
-- KEYS: 1 the new hash, 2 the attach key, 3 the pending index, 4 the owner's rate window,
--       5 the owner's pending requests, 6 the events stream, 7 the owner's kept requests,
--       8 the owner's kept bytes, 9 its audit trail, 10 the audit index.
-- ARGV: 1 CreateArgs (JSON), 2.. the delivery job's commands.
-- An identical pending request is re-attached to; an identical one a person answered and no client
-- has received yet is handed out once (then marked returned, until the call's client turns out to
-- be gone: gateway.mcp.delivery); otherwise, within the owner's limits, a new one is stored:
-- {'limited', which limit, seconds to wait} when past one.
local a = cjson.decode(ARGV[1])
local existing = redis.call('GET', KEYS[2])
if existing then
  local key = a.hf_prefix .. existing .. '}'
  local state = redis.call('HMGET', key, 'status', 'retain', 'returned')
  if state[1] == 'pending' then
    return {'attached', redis.call('HGETALL', key)}
  end
  if state[1] and state[2] == '1' and state[3] ~= '1' then
    redis.call('HSET', key, 'returned', '1')
    return {'retained', redis.call('HGETALL', key)}
  end
end
local now = a.now_ms
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now / 1000)
if redis.call('ZCARD', KEYS[5]) >= a.pending then
  local soonest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  return {'limited', 'pending', math.ceil(tonumber(soonest[2]) - now / 1000)}
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 60000)
if redis.call('ZCARD', KEYS[4]) >= a.per_minute then
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return {'limited', 'rate', math.ceil((tonumber(oldest[2]) + 60000 - now) / 1000)}
end
local kept = release_kept(KEYS[7], KEYS[8], now)
if kept + a.kept_size > a.kept_budget then
  local room_at = kept_room_at(KEYS[7], kept + a.kept_size - a.kept_budget)
  return {'limited', 'kept', math.ceil((room_at - now) / 1000)}
end
redis.call('ZADD', KEYS[4], now, a.id)
redis.call('PEXPIRE', KEYS[4], 60000)
keep_bytes(KEYS[7], KEYS[8], a.hash_expiry_ms, a.id, a.kept_size)
redis.call('HSET', KEYS[1], 'doc', a.doc, 'status', 'pending', 'deadline', a.deadline,
  'fingerprint', a.fingerprint, 'expire_reason', a.expire_reason, 'owner', a.owner)
local last = a.deadline
if a.full_deadline then
  redis.call('HSET', KEYS[1], 'full_deadline', a.full_deadline, 'full_expire_reason', a.full_expire_reason)
  last = a.full_deadline
end
if a.needed then redis.call('HSET', KEYS[1], 'needed', a.needed) end
if a.expire_action then redis.call('HSET', KEYS[1], 'expire_action', a.expire_action) end
redis.call('ZADD', KEYS[5], a.deadline, a.id)
local ttl = redis.call('PTTL', KEYS[5])  -- Redis 6.2 has no PEXPIRETIME
if ttl < 0 or now + ttl < tonumber(last) * 1000 then
  redis.call('PEXPIREAT', KEYS[5], math.ceil(tonumber(last) * 1000))
end
redis.call('PEXPIREAT', KEYS[1], a.hash_expiry_ms)
redis.call('SET', KEYS[2], a.id, 'PXAT', a.attach_expiry_ms)
redis.call('ZADD', KEYS[3], a.deadline, a.id)
-- Heard by the inbox (a new request to show); the entries of endings keep the stream trimmed.
redis.call('XADD', KEYS[6], '*', 'id', a.id, 'created', '1')
-- Trails past the retention leave the index as new requests come.
redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', (now - a.audit_keep_ms) / 1000)
audit(KEYS[9], KEYS[10], a.audit_keep_ms, a.id, now / 1000, a.audit_event)
run_commands(ARGV, 2)
return {'created', {}}
"""
)
"""Store a Human Function and queue its delivery, or re-attach, or hand out a kept result. A new
request counts against its owner's limits: pending requests, new requests per minute, and bytes
kept in Redis (the request's size until its keys expire)."""


class FinishArgs(TypedDict):
    """``ARGV[1]`` of ``FINISH``."""

    id: str
    status: str
    """The status ``outcome`` ends it with."""
    outcome: str
    """The outcome's JSON."""
    now: str
    """When (seconds since epoch, as text): stored as ``ended_at``, and compared with the deadline."""
    expired: str
    """The expired outcome's JSON for ``now``, used (with the request's own reason) when the
    deadline has passed under another ending."""
    retain_ms: int
    """How long the attach key keeps the result for the next identical call; 0 not at all."""
    attach_prefix: str
    events_keep_seconds: int
    owned_pending_prefix: str
    owned_kept_prefix: str
    owned_kept_bytes_prefix: str
    turns: NotRequired[list[int]]
    """Only for a sequential request: the turns (0-based indexes of its approvers) the person who
    answered holds; any other turn is refused (``{'turn', count}``)."""
    approver: NotRequired[str]
    """Only for an acceptance of a request that counts approvals: who accepted, as approvers are
    named (``slack:U1``, ``operator:alice``); a second acceptance by them is refused (``{'repeat'}``)."""
    approval: NotRequired[str]
    """With ``approver``: the approval's JSON, stored as ``approval:<n>``."""
    approved_event: NotRequired[str]
    """With ``approver``: its ``approved`` event without ``count`` and ``of``, which the script adds
    and writes in the same step as the approval (before the ``ended`` event it may bring)."""
    audit_event: str
    """Its ``ended`` event for ``outcome`` (the script writes its own if it expires instead)."""
    audit_keep_ms: int
    buckets: list[str]
    """``gateway.core.metrics.TIME_TO_ANSWER_BUCKETS`` as text."""


FINISH = (
    RUN_COMMANDS
    + EVENTS_MIN_ID
    + EXPIRED_OUTCOME
    + WITH_APPROVALS
    + KEPT_BYTES
    + AUDIT
    + """
-- KEYS: 1 the hash, 2 the pending index, 3 the events stream, 4 the unsynced index, 5 its audit
--       trail, 6 the audit index, 7 the time-to-answer metric.
-- ARGV: 1 FinishArgs (JSON), 2.. the update job's commands (run only when a message may exist:
--       references recorded, or a delivery started).
-- Any other ending asked for at or after the deadline is an expiry.
local a = cjson.decode(ARGV[1])
local f = redis.call('HMGET', KEYS[1],
  'status', 'deadline', 'fingerprint', 'refs', 'attempts', 'owner', 'expire_reason', 'expire_action',
  'doc')
if not f[1] then return {'missing', ''} end
if f[1] ~= 'pending' then return {f[1], redis.call('HGET', KEYS[1], 'outcome') or ''} end
local status, outcome, retain, event = a.status, a.outcome, a.retain_ms, a.audit_event
if status ~= 'expired' and tonumber(a.now) >= tonumber(f[2]) then
  status, outcome, retain = 'expired', expired_outcome(cjson.decode(a.expired), f[7], f[8]), 0
  event = expired_event(a.now, cjson.decode(outcome).reason)
end
-- Approvals (docs/state-machine.md#approvals): a sequential request takes answers only from the
-- approver whose turn it is; each acceptance is recorded once per person, and ends the request only
-- when it is the last one needed.
-- A repeat acceptance is told so whatever the turn (it is someone else's after one's approval).
if status == 'accepted' and a.approver
    and redis.call('HEXISTS', KEYS[1], 'approved:' .. a.approver) == 1 then
  return {'repeat', ''}
end
if status ~= 'expired' and a.turns then
  local count = tonumber(redis.call('HGET', KEYS[1], 'approval_count') or '0')
  local mine = false
  for _, turn in ipairs(a.turns) do if turn == count then mine = true end end
  if not mine then return {'turn', tostring(count)} end
end
if status == 'accepted' and a.approver then
  local count = tonumber(redis.call('HGET', KEYS[1], 'approval_count') or '0') + 1
  local needed = tonumber(redis.call('HGET', KEYS[1], 'needed') or '1')
  redis.call('HSET', KEYS[1], 'approval:' .. count, a.approval, 'approved:' .. a.approver, count,
    'approval_count', count)
  if a.approved_event then
    audit(KEYS[5], KEYS[6], a.audit_keep_ms, a.id, tonumber(a.now),
      string.sub(a.approved_event, 1, -2) .. ',"count":' .. count .. ',"of":' .. needed .. '}')
  end
  if count < needed then
    redis.call('XADD', KEYS[3], 'MINID', '~', events_min_id(a.events_keep_seconds), '*', 'id', a.id,
      'approved', tostring(count))
    if (f[4] or tonumber(f[5] or '0') > 0) and #ARGV >= 2 then run_commands(ARGV, 2) end
    return {'approved', redis.call('HGETALL', KEYS[1])}
  end
end
outcome = with_approvals(KEYS[1], outcome)
redis.call('HSET', KEYS[1], 'status', status, 'outcome', outcome, 'ended_at', a.now)
audit(KEYS[5], KEYS[6], a.audit_keep_ms, a.id, tonumber(a.now), event)
count_answer(KEYS[7], a.buckets, f[9], status, a.now)
redis.call('ZREM', KEYS[2], a.id)
if f[6] then
  redis.call('ZREM', a.owned_pending_prefix .. f[6] .. '}', a.id)
  -- The answer is kept with the request: its bytes count against the owner's budget too.
  local members = a.owned_kept_prefix .. f[6] .. '}'
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 and redis.call('EXISTS', members) == 1 then
    local clock = redis.call('TIME')  -- the hash's own expiry: Redis's clock plus what is left
    local expiry = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) + ttl
    keep_bytes(members, a.owned_kept_bytes_prefix .. f[6] .. '}', expiry, a.id .. ':answer', #outcome)
  end
end
if f[3] then
  local attach = a.attach_prefix .. f[3] .. '}'
  if redis.call('GET', attach) == a.id then
    if retain > 0 then
      redis.call('PEXPIRE', attach, retain)
      redis.call('HSET', KEYS[1], 'retain', '1')
    else
      redis.call('DEL', attach)
    end
  end
end
redis.call('XADD', KEYS[3], 'MINID', '~', events_min_id(a.events_keep_seconds), '*', 'id', a.id,
  'outcome', outcome)
if (f[4] or tonumber(f[5] or '0') > 0) and #ARGV >= 2 then
  redis.call('ZADD', KEYS[4], a.now, a.id)
  run_commands(ARGV, 2)
end
return {'ok', redis.call('HGETALL', KEYS[1])}
"""
)
"""End a pending Human Function; {'ok', ended hash} or {old status, old outcome} or {'missing'};
for an approval that is not the last one needed {'approved', hash}; refused, {'turn', approvals so
far} or {'repeat'}."""


class ReapArgs(TypedDict):
    """``ARGV[1]`` of ``REAP``."""

    now: str
    """Seconds since epoch, as text: what is due by then ends, with it as ``ended_at``."""
    batch: int
    """Most index entries to look at."""
    expired: str
    """The expired outcome's JSON for ``now``; each request gets its own reason in it."""
    hf_prefix: str
    attach_prefix: str
    events_keep_seconds: int
    owned_pending_prefix: str
    audit_prefix: str
    """``redis_keys.AUDIT_PREFIX``, to name each ended request's trail."""
    audit_keep_ms: int
    buckets: list[str]


REAP = (
    EVENTS_MIN_ID
    + EXPIRED_OUTCOME
    + WITH_APPROVALS
    + AUDIT
    + """
-- KEYS: 1 the pending index, 2 the events stream, 3 the unsynced index, 4 the audit index, 5 the
--       time-to-answer metric.
-- ARGV: 1 ReapArgs (JSON).
-- Returns {how many index entries were due, how many ended here, then id and channel of each of
-- those whose message needs updating, then the id of each one ended here}.
local a = cjson.decode(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', a.now, 'LIMIT', 0, a.batch)
local template = cjson.decode(a.expired)
local to_update = {}
local ended = {}
local expired = 0
local min_id = events_min_id(a.events_keep_seconds)
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local key = a.hf_prefix .. id .. '}'
  local f = redis.call('HMGET', key,
    'status', 'fingerprint', 'refs', 'attempts', 'expire_reason', 'doc', 'owner', 'expire_action')
  if f[7] then redis.call('ZREM', a.owned_pending_prefix .. f[7] .. '}', id) end
  if f[1] == 'pending' then
    expired = expired + 1
    table.insert(ended, id)
    local outcome = with_approvals(key, expired_outcome(template, f[5], f[8]))
    redis.call('HSET', key, 'status', 'expired', 'outcome', outcome, 'ended_at', a.now)
    audit(a.audit_prefix .. id .. '}', KEYS[4], a.audit_keep_ms, id, tonumber(a.now),
      expired_event(a.now, f[5] or template.reason))
    if f[6] then count_answer(KEYS[5], a.buckets, f[6], 'expired', a.now) end
    if f[2] then
      local attach = a.attach_prefix .. f[2] .. '}'
      if redis.call('GET', attach) == id then redis.call('DEL', attach) end
    end
    redis.call('XADD', KEYS[2], 'MINID', '~', min_id, '*', 'id', id, 'outcome', outcome)
    if f[3] or tonumber(f[4] or '0') > 0 then
      redis.call('ZADD', KEYS[3], a.now, id)
      table.insert(to_update, id)
      table.insert(to_update, cjson.decode(f[6])['channel'])
    end
  end
end
return {#ids, expired, to_update, ended}
"""
)
"""Expire every overdue pending Human Function (up to a batch) in one call."""


class NoteArgs(TypedDict):
    """``ARGV[1]`` of ``NOTE``."""

    id: str
    note: str
    """What went wrong delivering it; '' clears it."""
    events_keep_seconds: int


NOTE = (
    EVENTS_MIN_ID
    + """
-- KEYS: 1 the hash, 2 the events stream. ARGV: 1 NoteArgs (JSON).
local a = cjson.decode(ARGV[1])
if a.note == '' then
  -- A post that was made clears the problem whatever the status: a click may have ended the
  -- request between the post and this note, and an ended request shows no stale problem.
  redis.call('HDEL', KEYS[1], 'delivery_error')
  if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
else
  if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
  redis.call('HSET', KEYS[1], 'delivery_error', a.note)
end
redis.call('XADD', KEYS[2], 'MINID', '~', events_min_id(a.events_keep_seconds), '*', 'id', a.id,
  'note', a.note)
return 1
"""
)
"""Record what went wrong delivering a pending request (or clear it, at any status), and tell its
waiting calls."""


class StartArgs(TypedDict):
    """``ARGV[1]`` of ``START``."""

    id: str
    attach_prefix: str
    events_keep_seconds: int
    owned_pending_prefix: str


START = (
    EVENTS_MIN_ID
    + """
-- KEYS: 1 the hash, 2 the pending index, 3 the events stream. ARGV: 1 StartArgs (JSON).
-- A person started answering a request opened with an idle timeout: it gets its full deadline.
local a = cjson.decode(ARGV[1])
local f = redis.call('HMGET', KEYS[1],
  'status', 'deadline', 'full_deadline', 'full_expire_reason', 'fingerprint', 'owner')
if f[1] ~= 'pending' or not f[3] then return 0 end
redis.call('HSET', KEYS[1], 'deadline', f[3], 'expire_reason', f[4])
redis.call('HDEL', KEYS[1], 'full_deadline', 'full_expire_reason')
redis.call('ZADD', KEYS[2], 'XX', f[3], a.id)
if f[6] then redis.call('ZADD', a.owned_pending_prefix .. f[6] .. '}', 'XX', f[3], a.id) end
if f[5] then
  local attach = a.attach_prefix .. f[5] .. '}'
  if redis.call('GET', attach) == a.id then
    redis.call('PEXPIREAT', attach, math.floor(tonumber(f[3]) * 1000))
  end
end
redis.call('XADD', KEYS[3], 'MINID', '~', events_min_id(a.events_keep_seconds), '*', 'id', a.id,
  'deadline', f[3])
return 1
"""
)
"""Give a request with an idle timeout its full deadline (a person started answering); 1 if it did."""


class AdmitArgs(TypedDict):
    """``ARGV[1]`` of ``ADMIT``."""

    now_ms: int
    allowed: int
    """Sessions the owner may have open at once."""
    member: str
    """The reservation's member: the session id it becomes."""
    expiry_ms: int
    """When the reservation lapses unless the session is saved (ms since epoch)."""


ADMIT = """
-- KEYS: 1 the owner's open MCP sessions. ARGV: 1 AdmitArgs (JSON).
-- Drops the owner's expired sessions, counts the rest and, below the cap, reserves one more slot in
-- the same step, so openings racing in any number of processes never pass the cap: 1 if reserved.
local a = cjson.decode(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', a.now_ms)
if redis.call('ZCARD', KEYS[1]) >= a.allowed then return 0 end
redis.call('ZADD', KEYS[1], a.expiry_ms, a.member)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 or a.now_ms + ttl < a.expiry_ms then
  redis.call('PEXPIREAT', KEYS[1], a.expiry_ms)
end
return 1
"""
"""Reserve a slot for a new MCP session of one caller within its cap, atomically; 1 if reserved."""


class RecordArgs(TypedDict):
    """``ARGV[1]`` of ``RECORD``."""

    id: str
    event: str
    """The event's JSON (``gateway.core.audit.event_json``)."""
    at: float
    """When (seconds since epoch): its trail's place in the index."""
    keep_ms: int
    max_events: int
    """Longest a trail grows through ``RECORD`` (the scripts that end a request always append)."""
    counter: str
    """The shared counter's field this event counts (``gateway.core.metrics``); '' none."""


RECORD = """
-- KEYS: 1 the trail, 2 the audit index, 3 the shared counters. ARGV: 1 RecordArgs (JSON).
-- Counts the event, then appends it unless the trail is full: 1 if appended.
local a = cjson.decode(ARGV[1])
if a.counter ~= '' then redis.call('HINCRBY', KEYS[3], a.counter, 1) end
if redis.call('LLEN', KEYS[1]) >= a.max_events then return 0 end
redis.call('RPUSH', KEYS[1], a.event)
redis.call('PEXPIRE', KEYS[1], a.keep_ms)
redis.call('ZADD', KEYS[2], a.at, a.id)
return 1
"""
"""Append one event to a request's audit trail (``gateway.core.audit.record``), bounded."""
