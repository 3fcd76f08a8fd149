"""The Lua scripts of the store, one named constant each.

Each runs atomically in Redis, so a request is never stored without its delivery job, never ends
twice, and never ends without its event being written. Scripts that enqueue RQ jobs take the
commands RQ itself would have run (recorded by ``gateway.core.queue``) as trailing arguments, each as
its argument count followed by its arguments, and run them with ``run_commands``.
"""

from __future__ import annotations

EVENTS_MIN_ID = """
local function events_min_id(keep_seconds)
  local now = redis.call('TIME')
  return string.format('%d-0', (tonumber(now[1]) - tonumber(keep_seconds)) * 1000)
end
"""
"""Lua helper: the oldest events-stream id to keep, from Redis's own clock (never the caller's: a
gateway whose clock runs ahead must not trim away the events it writes)."""

RUN_COMMANDS = """
local function run_commands(args, from)
  local i = from
  while i <= #args do
    local n = tonumber(args[i])
    local command = {}
    for j = 1, n do command[j] = args[i + j] end
    redis.call(unpack(command))
    i = i + n + 1
  end
end
"""
"""Lua helper: run the recorded commands found in ``args`` from index ``from`` on."""

CREATE = (
    RUN_COMMANDS
    + """
-- KEYS: 1 the new hash, 2 the attach key, 3 the pending index, 4 the owner's rate window,
--       5 the owner's pending requests, 6 the events stream.
-- ARGV: 1 id, 2 doc, 3 deadline, 4 fingerprint, 5 expire reason, 6 hash expiry (ms since epoch),
--       7 attach expiry (ms since epoch), 8 hash key prefix, 9 full deadline ('' for none),
--       10 its expire reason, 11 owner, 12 new requests allowed per minute, 13 pending requests
--       allowed, 14 now (ms since epoch), 15.. the delivery job's commands.
-- An identical pending request is re-attached to; an identical one a person answered and no call
-- has returned yet is handed out once (then marked returned); otherwise, within the owner's
-- limits, a new one is stored: {'limited', which limit, seconds to wait} when past one.
local existing = redis.call('GET', KEYS[2])
if existing then
  local key = ARGV[8] .. existing .. '}'
  local state = redis.call('HMGET', key, 'status', 'retain', 'returned')
  if state[1] == 'pending' then
    return {'attached', redis.call('HGETALL', key)}
  end
  if state[1] and state[2] == '1' and state[3] ~= '1' then
    redis.call('HSET', key, 'returned', '1')
    return {'retained', redis.call('HGETALL', key)}
  end
end
local now = tonumber(ARGV[14])
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now / 1000)
if redis.call('ZCARD', KEYS[5]) >= tonumber(ARGV[13]) then
  local soonest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  return {'limited', 'pending', math.ceil(tonumber(soonest[2]) - now / 1000)}
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 60000)
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[12]) then
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return {'limited', 'rate', math.ceil((tonumber(oldest[2]) + 60000 - now) / 1000)}
end
redis.call('ZADD', KEYS[4], now, ARGV[1])
redis.call('PEXPIRE', KEYS[4], 60000)
redis.call('HSET', KEYS[1], 'doc', ARGV[2], 'status', 'pending', 'deadline', ARGV[3],
  'fingerprint', ARGV[4], 'expire_reason', ARGV[5], 'owner', ARGV[11])
local last = ARGV[3]
if ARGV[9] ~= '' then
  redis.call('HSET', KEYS[1], 'full_deadline', ARGV[9], 'full_expire_reason', ARGV[10])
  last = ARGV[9]
end
redis.call('ZADD', KEYS[5], ARGV[3], ARGV[1])
local ttl = redis.call('PTTL', KEYS[5])  -- Redis 6.2 has no PEXPIRETIME
if ttl < 0 or now + ttl < tonumber(last) * 1000 then
  redis.call('PEXPIREAT', KEYS[5], math.ceil(tonumber(last) * 1000))
end
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
redis.call('SET', KEYS[2], ARGV[1], 'PXAT', ARGV[7])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
-- Heard by the inbox (a new request to show); the entries of endings keep the stream trimmed.
redis.call('XADD', KEYS[6], '*', 'id', ARGV[1], 'created', '1')
run_commands(ARGV, 15)
return {'created', {}}
"""
)
"""Store a Human Function and queue its delivery, or re-attach, or hand out a kept result."""

FINISH = (
    RUN_COMMANDS
    + EVENTS_MIN_ID
    + """
-- KEYS: 1 the hash, 2 the pending index, 3 the events stream, 4 the unsynced index.
-- ARGV: 1 id, 2 status, 3 outcome JSON, 4 now, 5 expired-outcome JSON, 6 retention (ms; 0 none),
--       7 attach key prefix, 8 seconds of events to keep, 9 owner-pending key prefix, 10.. the
--       update job's commands (run only when a message may exist: references recorded, or a
--       delivery started).
local f = redis.call('HMGET', KEYS[1], 'status', 'deadline', 'fingerprint', 'refs', 'attempts', 'owner')
if not f[1] then return {'missing', ''} end
if f[1] ~= 'pending' then return {f[1], redis.call('HGET', KEYS[1], 'outcome') or ''} end
local status, outcome, retain = ARGV[2], ARGV[3], tonumber(ARGV[6])
if status ~= 'expired' and tonumber(ARGV[4]) >= tonumber(f[2]) then
  status, outcome, retain = 'expired', ARGV[5], 0
end
redis.call('HSET', KEYS[1], 'status', status, 'outcome', outcome, 'ended_at', ARGV[4])
redis.call('ZREM', KEYS[2], ARGV[1])
if f[6] then redis.call('ZREM', ARGV[9] .. f[6] .. '}', ARGV[1]) end
if f[3] then
  local attach = ARGV[7] .. f[3] .. '}'
  if redis.call('GET', attach) == ARGV[1] then
    if retain > 0 then
      redis.call('PEXPIRE', attach, retain)
      redis.call('HSET', KEYS[1], 'retain', '1')
    else
      redis.call('DEL', attach)
    end
  end
end
redis.call('XADD', KEYS[3], 'MINID', '~', events_min_id(ARGV[8]), '*', 'id', ARGV[1], 'outcome', outcome)
if (f[4] or tonumber(f[5] or '0') > 0) and #ARGV >= 10 then
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
  run_commands(ARGV, 10)
end
return {'ok', redis.call('HGETALL', KEYS[1])}
"""
)
"""End a pending Human Function; {'ok', ended hash} or {old status, old outcome} or {'missing'}."""

REAP = (
    EVENTS_MIN_ID
    + """
-- KEYS: 1 the pending index, 2 the events stream, 3 the unsynced index.
-- ARGV: 1 now, 2 most to look at, 3 hash key prefix, 4 attach key prefix, 5 seconds of events to
--       keep, 6 owner-pending key prefix.
-- Returns {how many index entries were due, how many ended here, then id and channel of each of
-- those whose message needs updating}.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local to_update = {}
local expired = 0
local min_id = events_min_id(ARGV[5])
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local key = ARGV[3] .. id .. '}'
  local f = redis.call('HMGET', key,
    'status', 'fingerprint', 'refs', 'attempts', 'expire_reason', 'doc', 'owner')
  if f[7] then redis.call('ZREM', ARGV[6] .. f[7] .. '}', id) end
  if f[1] == 'pending' then
    expired = expired + 1
    local outcome = cjson.encode({status = 'expired', action = 'cancel', via = 'timeout',
      reason = f[5] or 'Request timed out', at = tonumber(ARGV[1])})
    redis.call('HSET', key, 'status', 'expired', 'outcome', outcome, 'ended_at', ARGV[1])
    if f[2] then
      local attach = ARGV[4] .. f[2] .. '}'
      if redis.call('GET', attach) == id then redis.call('DEL', attach) end
    end
    redis.call('XADD', KEYS[2], 'MINID', '~', min_id, '*', 'id', id, 'outcome', outcome)
    if f[3] or tonumber(f[4] or '0') > 0 then
      redis.call('ZADD', KEYS[3], ARGV[1], id)
      table.insert(to_update, id)
      table.insert(to_update, cjson.decode(f[6])['channel'])
    end
  end
end
return {#ids, expired, to_update}
"""
)
"""Expire every overdue pending Human Function (up to a batch) in one call."""

NOTE = (
    EVENTS_MIN_ID
    + """
-- KEYS: 1 the hash, 2 the events stream. ARGV: 1 id, 2 note ('' clears it), 3 seconds of events to keep.
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], 'delivery_error')
else
  redis.call('HSET', KEYS[1], 'delivery_error', ARGV[2])
end
redis.call('XADD', KEYS[2], 'MINID', '~', events_min_id(ARGV[3]), '*', 'id', ARGV[1], 'note', ARGV[2])
return 1
"""
)
"""Record (or clear) what went wrong delivering a pending request, and tell its waiting calls."""

START = (
    EVENTS_MIN_ID
    + """
-- KEYS: 1 the hash, 2 the pending index, 3 the events stream.
-- ARGV: 1 id, 2 attach key prefix, 3 seconds of events to keep, 4 owner-pending key prefix.
-- A person started answering a request opened with an idle timeout: it gets its full deadline.
local f = redis.call('HMGET', KEYS[1],
  'status', 'deadline', 'full_deadline', 'full_expire_reason', 'fingerprint', 'owner')
if f[1] ~= 'pending' or not f[3] then return 0 end
redis.call('HSET', KEYS[1], 'deadline', f[3], 'expire_reason', f[4])
redis.call('HDEL', KEYS[1], 'full_deadline', 'full_expire_reason')
redis.call('ZADD', KEYS[2], 'XX', f[3], ARGV[1])
if f[6] then redis.call('ZADD', ARGV[4] .. f[6] .. '}', 'XX', f[3], ARGV[1]) end
if f[5] then
  local attach = ARGV[2] .. f[5] .. '}'
  if redis.call('GET', attach) == ARGV[1] then
    redis.call('PEXPIREAT', attach, math.floor(tonumber(f[3]) * 1000))
  end
end
redis.call('XADD', KEYS[3], 'MINID', '~', events_min_id(ARGV[3]), '*', 'id', ARGV[1], 'deadline', f[3])
return 1
"""
)
"""Give a request with an idle timeout its full deadline (a person started answering); 1 if it did."""
