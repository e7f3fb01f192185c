"""The Lua scripts: each repository call is one of these, run atomically in one round trip.

Conversation keys (KEYS[1..12]) follow :data:`~._schema.CONVERSATION_KEY_NAMES`:
meta, msgs, ids, log, chat, time, facets, type:system, type:user, type:assistant, type:tool,
type:event. Scripts that also maintain the indexes take KEYS[13] = conversations,
KEYS[14] = expiry, KEYS[15] = the owner's index. Scripts run on plain Redis 7 (no modules).
"""

from __future__ import annotations

__all__ = [
    "APPEND",
    "APPEND_CHECKED",
    "DELETE",
    "DELETE_CHAT",
    "HISTORY",
    "INDEX",
    "LATEST",
    "RECENT",
    "REPLACE",
    "SAVE_SUMMARY",
    "WINDOW",
]

# Shared helpers. unpack() is limited by Lua's C stack, so long lists go in chunks.
_PRELUDE = """
local CHUNK = 1000
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, CHUNK do
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
  return out
end
local function each_chunk(command, key, items)
  for i = 1, #items, CHUNK do
    redis.call(command, key, unpack(items, i, math.min(i + CHUNK - 1, #items)))
  end
end
local function with_bodies(msgs_key, positions, out)
  if #positions == 0 then return out end
  local bodies = hmget(msgs_key, positions)
  for i = 1, #positions do
    out[#out + 1] = positions[i]
    out[#out + 1] = bodies[i]
  end
  return out
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# Stores ARGV[4] messages (5 arguments each) unless their id is already stored (or repeated
# earlier in the batch), then refreshes the indexes and the TTL of every key, so the
# conversation expires as a whole. The writes are batched: one command per key, not per
# message (each redis.call from Lua costs about a microsecond on the server).
_APPEND_BODY = """
local TYPE_KEY = {system = 8, user = 9, assistant = 10, tool = 11, event = 12}
local CHAT = {user = true, assistant = true, tool = true}
local function append(K, A)
  local ttl = tonumber(A[1])
  local cid, owner = A[2], A[3]
  local count = tonumber(A[4])
  local out = {}
  local ids = {}
  for m = 1, count do ids[m] = A[5 * m] end
  local known = hmget(K[3], ids)
  local fresh, seen = {}, {}
  for m = 1, count do
    local id = ids[m]
    if not known[m] and not seen[id] then
      seen[id] = true
      fresh[#fresh + 1] = m
    end
  end
  local by_type = {}
  if #fresh > 0 then
    local last = redis.call('HINCRBY', K[1], 'seq', #fresh)
    local pos = last - #fresh
    local id_kv, body_kv, facet_kv, log, time, chat = {}, {}, {}, {}, {}, {}
    for i = 1, #fresh do
      local m = fresh[i]
      pos = pos + 1
      local p = tostring(pos)  -- once, not at every command that takes it
      local a = 5 * m
      local kind, created = A[a + 1], A[a + 2]
      id_kv[#id_kv + 1] = A[a]
      id_kv[#id_kv + 1] = p
      body_kv[#body_kv + 1] = p
      body_kv[#body_kv + 1] = A[a + 4]
      facet_kv[#facet_kv + 1] = p
      facet_kv[#facet_kv + 1] = kind .. '\\t' .. created .. '\\t' .. A[a + 3]
      log[#log + 1] = p
      log[#log + 1] = p
      time[#time + 1] = created
      time[#time + 1] = p
      local key = TYPE_KEY[kind]
      local typed = by_type[key]
      if not typed then
        typed = {}
        by_type[key] = typed
      end
      typed[#typed + 1] = p
      typed[#typed + 1] = p
      if CHAT[kind] then
        chat[#chat + 1] = p
        chat[#chat + 1] = p
      end
      out[#out + 1] = m
      out[#out + 1] = pos
    end
    each_chunk('HSET', K[3], id_kv)
    each_chunk('HSET', K[2], body_kv)
    each_chunk('HSET', K[7], facet_kv)
    each_chunk('ZADD', K[4], log)
    each_chunk('ZADD', K[6], time)
    for key, typed in pairs(by_type) do each_chunk('ZADD', K[key], typed) end
    if #chat > 0 then each_chunk('ZADD', K[5], chat) end
  end
  -- The TTL goes on type:event only if the conversation holds events, so an append to a
  -- conversation without any costs no more commands than before events existed. Something
  -- was stored (#fresh > 0) only if meta exists, as HINCRBY created it.
  local has_events
  if #fresh > 0 then
    has_events = by_type[12] ~= nil or redis.call('EXISTS', K[12]) == 1
  else
    if redis.call('EXISTS', K[1]) == 0 then return out end
    has_events = redis.call('EXISTS', K[12]) == 1
  end
  local last = has_events and 12 or 11
  redis.call('ZADD', K[13], 0, cid)
  if owner ~= '' then redis.call('ZADD', K[15], 0, cid) end
  local member = owner .. '\\n' .. cid
  if ttl > 0 then
    for k = 1, last do redis.call('PEXPIRE', K[k], ttl) end
    redis.call('ZADD', K[14], now_ms() + ttl, member)
  else
    -- Without a TTL of our own, keep the one the conversation has, on every key.
    local left = redis.call('PTTL', K[1])
    if left > 0 then
      for k = 1, last do redis.call('PEXPIRE', K[k], left) end
    else
      redis.call('ZREM', K[14], member)
    end
  end
  return out
end
"""

APPEND = _PRELUDE + _APPEND_BODY + "return append(KEYS, ARGV)\n"
"""Append; replies ``[batch index, position, ...]`` for the messages newly stored."""

APPEND_CHECKED = (
    _PRELUDE
    + _APPEND_BODY
    + """
-- The version is the position counter; checked before anything is claimed or touched.
local expected = tonumber(ARGV[5 * tonumber(ARGV[4]) + 5])
local version = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
if version == expected then return append(KEYS, ARGV) end
local ids = {}
for m = 1, tonumber(ARGV[4]) do ids[m] = ARGV[5 * m] end
local out = hmget(KEYS[3], ids)
table.insert(out, 1, version)
table.insert(out, 1, 0)
return out
"""
)
"""Append only at version ARGV[last] (the append's arguments come first).

Replies as APPEND, or ``[0, version, position or nil of each message id]`` if the
conversation is at another version: nothing is written then. (A batch index is never 0.)
"""

REPLACE = (
    _PRELUDE
    + _APPEND_BODY
    + """
-- Positions are never reused: keep the counter across the replacement.
local seq = redis.call('HGET', KEYS[1], 'seq')
for k = 1, 12 do redis.call('DEL', KEYS[k]) end
if seq then redis.call('HSET', KEYS[1], 'seq', seq) end
return append(KEYS, ARGV)
"""
)
"""save_all: drop every message, keep the position counter, append the new ones."""

DELETE = """
for k = 1, 12 do redis.call('DEL', KEYS[k]) end
redis.call('ZREM', KEYS[13], ARGV[1])
redis.call('ZREM', KEYS[14], ARGV[2])
redis.call('ZREM', KEYS[15], ARGV[1])
return 1
"""
"""Delete a conversation and its index entries. ARGV: id, expiry member."""

RECENT = (
    _PRELUDE
    + """
local max = ARGV[1] == '' and '+inf' or ('(' .. ARGV[1])
local positions = redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'LIMIT', 0, ARGV[2])
return with_bodies(KEYS[2], positions, {})
"""
)
"""Newest ARGV[2] chat messages before ARGV[1]. KEYS: chat, msgs. Newest first."""

LATEST = """
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0)
if #top == 0 then return {} end
return {top[1], redis.call('HGET', KEYS[2], top[1])}
"""
"""The newest message of one type. KEYS: that type's set, msgs."""

WINDOW = (
    _PRELUDE
    + """
local out = {}
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0)
if #top == 0 then
  out[1] = 0
  out[2] = false
else
  out[1] = top[1]
  out[2] = redis.call('HGET', KEYS[3], top[1])
end
local limit = tonumber(ARGV[1])
if limit == 0 then return out end
return with_bodies(KEYS[3], redis.call('ZREVRANGE', KEYS[2], 0, limit - 1), out)
"""
)
"""The system message and the newest ARGV[1] chat messages, in one round trip.

KEYS: type:system, chat, msgs. Replies ``[system position, body (nil if none), position,
body, ...]`` with the window newest first.
"""

DELETE_CHAT = (
    _PRELUDE
    + """
local min, max = ARGV[1], ARGV[2]
local doomed = redis.call('ZRANGEBYSCORE', KEYS[5], min, max)
if #doomed == 0 then return 0 end
each_chunk('ZREM', KEYS[4], doomed)
each_chunk('ZREM', KEYS[6], doomed)
each_chunk('HDEL', KEYS[2], doomed)
each_chunk('HDEL', KEYS[7], doomed)
for k = 9, 11 do redis.call('ZREMRANGEBYSCORE', KEYS[k], min, max) end
redis.call('ZREMRANGEBYSCORE', KEYS[5], min, max)
return #doomed
"""
)
"""Delete the chat messages (user, assistant, tool: the chat set) positioned from ARGV[1]
to ARGV[2] (score bounds such as ``-inf`` or ``(7``); system messages and events stay, and
ids stay remembered. KEYS: the twelve. Replies how many were deleted."""

HISTORY = (
    _PRELUDE
    + """
local after, since, till, types = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local has_text, text = ARGV[5] == '1', ARGV[6]
local limit, budget = tonumber(ARGV[7]), tonumber(ARGV[8])
local TYPE_KEY = {system = 8, user = 9, assistant = 10, tool = 11, event = 12}
local wanted = nil
if types ~= '' then
  wanted = {}
  for t in string.gmatch(types, '%S+') do wanted[t] = true end
end
local since_n, till_n = tonumber(since), tonumber(till)
local function matches_facet(facet)
  if not facet then return false end
  local kind, created, folded = string.match(facet, '^(%a+)\\t(%-?%d+)\\t(.*)$')
  if not kind then return false end
  if wanted and not wanted[kind] then return false end
  created = tonumber(created)
  if since_n and created < since_n then return false end
  if till_n and created >= till_n then return false end
  if has_text and not string.find(folded, text, 1, true) then return false end
  return true
end
local function matches(pos)
  return matches_facet(redis.call('HGET', KEYS[7], pos))
end
local found = {}
local function finish(resume)
  return with_bodies(KEYS[2], found, {resume or ''})
end
local low = after == '' and '-inf' or ('(' .. after)

-- Types only: merge the per-type sets, bounded by limit per type.
if wanted and not has_text and not since_n and not till_n then
  local positions = {}
  for kind in pairs(wanted) do
    local key = TYPE_KEY[kind]
    if key then
      local part = redis.call('ZRANGEBYSCORE', KEYS[key], low, '+inf', 'LIMIT', 0, limit)
      for _, p in ipairs(part) do positions[#positions + 1] = tonumber(p) end
    end
  end
  table.sort(positions)
  for i = 1, math.min(limit, #positions) do found[i] = positions[i] end
  return finish(nil)
end

-- A time range: read it from the time index when it holds at most `budget` messages.
if since_n or till_n then
  local min = since_n and since or '-inf'
  local max = till_n and ('(' .. till) or '+inf'
  if redis.call('ZCOUNT', KEYS[6], min, max) <= budget then
    local after_n = tonumber(after)
    local positions = {}
    for _, p in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], min, max)) do
      local n = tonumber(p)
      if not after_n or n > after_n then positions[#positions + 1] = n end
    end
    table.sort(positions)
    for _, n in ipairs(positions) do
      if matches(n) then
        found[#found + 1] = n
        if #found >= limit then break end
      end
    end
    return finish(nil)
  end
end

-- Otherwise walk the log in position order, examining at most `budget` messages; the
-- reply's first element tells the caller where to resume if the budget ran out.
local cursor, scanned = low, 0
while true do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[4], cursor, '+inf', 'LIMIT', 0, 256)
  local facets = #batch > 0 and redis.call('HMGET', KEYS[7], unpack(batch)) or {}
  for i, p in ipairs(batch) do
    scanned = scanned + 1
    if matches_facet(facets[i]) then
      found[#found + 1] = p
      if #found >= limit then return finish(nil) end
    end
    cursor = '(' .. p
    if scanned >= budget then return finish(p) end
  end
  if #batch < 256 then return finish(nil) end
end
"""
)
"""find_history. KEYS: the twelve. Replies ``[resume or '', position, body, ...]``."""

INDEX = (
    _PRELUDE
    + """
-- Drop index entries of conversations whose TTL has passed (their keys are already gone).
local now = now_ms()
local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, member in ipairs(dead) do
  local cut = string.find(member, '\\n', 1, true)
  local owner, cid = string.sub(member, 1, cut - 1), string.sub(member, cut + 1)
  redis.call('ZREM', KEYS[2], cid)
  if owner ~= '' then redis.call('ZREM', ARGV[1] .. owner, cid) end
end
if #dead > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) end
local mode = ARGV[2]
if mode == 'purge' then return #dead end
if mode == 'all' then return redis.call('ZRANGE', KEYS[2], 0, -1) end
local start = ARGV[3] == '' and '-' or ('(' .. ARGV[4])
return redis.call('ZRANGEBYLEX', KEYS[1], start, '+', 'LIMIT', 0, tonumber(ARGV[5]) + 1)
"""
)
"""Clean expired index entries, then list or count.

KEYS: the index to list (conversations or an owner's), conversations, expiry.
ARGV: owner key prefix, mode (``purge``, ``all`` or ``page``), has cursor, cursor, limit.
"""

SAVE_SUMMARY = """
local version = tonumber(redis.call('HGET', KEYS[1], 'summary_version') or '0')
if version ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'summary_version', version + 1, 'summary', ARGV[2],
  'summary_covers', ARGV[3])
return 1
"""
"""Compare-and-set of the summary, kept in the meta hash (it expires and is deleted with
the conversation). KEYS[1]: meta. ARGV: expected version, text, covered position."""
