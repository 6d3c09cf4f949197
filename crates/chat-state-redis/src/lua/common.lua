-- common.lua: helpers shared by the operations: the top of the function
-- library (scripts.rs builds it), defined once when a server loads it; each
-- operation stays one atomic FCALL.
--
-- Nothing here builds a key name: every key a script touches arrives in KEYS,
-- and all of them share the scope's hash tag.
--
-- Conventions shared by the scripts:
--   * Time is the server's (TIME), in milliseconds since the Unix epoch.
--     Lease and slot expiry is Redis's own (PEXPIRE, sorted-set scores).
--   * An event arrives as "<ref>\n<event JSON>", where <ref> is
--     "<event id>|<thread>" (escaped by the client: no '|' or newline inside).
--     A stored entry is "<admitted ms>|<expires ms or empty>|<ref>\n<JSON>".
--     The admits of `Drop` and `Queue` take the event already as the entry
--     it is when it runs at once: "<AT_HAND_OUT>||<ref>\n<JSON>" (see
--     below), stored as it came, so its bytes pass through Lua once.
--   * A report (an outcome an admit decided for another event) is
--     "R<fate>|<ref>": fate 'e' evicted, 's' superseded.
--   * The lease is a hash {tok, f = fence, s = the batch the holder holds,
--     c = stop requests since that batch} with a PX expiry: expired == absent.
--   * The in-flight batch is a hash {o = owner token, s = its seq, a = attempt,
--     l = lapses, h = handed back (1) or not, t = handed out at ms} and a list of
--     its entries and reports. It has no TTL: it stays until its holder
--     acknowledges it, or the next holder adopts it.
--   * A dedupe mark is a field of an hourly hash of its bucket (see the
--     marks section below): what the admit recorded, when the mark expires and
--     a digest of the request that set it, so a repeat of the same request
--     replays its decision instead of answering duplicate.
--   * An acknowledgement is a key "<scope acked prefix>:<token>:<seq>" (PX two
--     TTLs, at least a minute) while which a repeated acknowledgement is
--     answered 'released'. The caller names it, so it is declared like any key.

-- The server's clock: (milliseconds, microseconds) since the Unix epoch, read
-- once per script: every step of one atomic call sees the same instant.
local clock_ms, clock_us
-- The mark name a lookup in this call read, its hash of the current hour
-- and its field there: where `mark` writes.
local looked_up, looked_up_key, looked_up_field

-- Forgets what the last call remembered: each function's first line.
local function forget()
  clock_ms, looked_up, looked_up_key, looked_up_field = nil, nil, nil, nil
end
local function clock()
  if not clock_ms then
    local t = redis.call('TIME')
    local s, us = tonumber(t[1]), tonumber(t[2])
    clock_ms, clock_us = s * 1000 + math.floor(us / 1000), s * 1000000 + us
  end
  return clock_ms, clock_us
end

-- A whole number as text. Numbers go to Redis as text made here: a Lua
-- number given to redis.call is printed by the server as a double ('%.17g'),
-- which costs several times more.
local function int(n)
  return string.format('%d', n)
end

-- The next fencing number of the bucket: max(last + 1, server time in µs). The
-- counter key has no TTL (one per bucket, so a bounded number of keys), which
-- keeps fences growing across grants on a scope even after its keys are gone;
-- the time floor keeps them growing if the counter itself is ever lost.
local function next_fence(fence_key, us)
  -- One call in the common case: the clock is past the last fence.
  local last = tonumber(redis.call('SET', fence_key, int(us), 'GET') or '0')
  if last < us then
    return int(us)
  end
  local f = int(last + 1)
  redis.call('SET', fence_key, f)
  return f
end

-- The admission time of an entry admitted as the first of its batch: the
-- batch's hand-out time (its `t`), which is that admission's instant and is
-- never changed when the batch is handed out again. Written as a number
-- later than any clock, so that any reader that takes a wait as
-- max(0, hand-out - admitted) reads it as what such an entry always is:
-- waited 0, no expiry.
local AT_HAND_OUT = '9999999999999||'

-- An event sent as its run-at-once entry, as an entry admitted at `now`
-- that expires `ttl` ms later (ttl as text, as it came).
local function dated(as_first, now, ttl)
  return int(now) .. '|' .. int(now + tonumber(ttl)) .. '|' .. string.sub(as_first, #AT_HAND_OUT + 1)
end

-- Grants the scope's exclusive lease, which the caller found absent, to
-- `token` for `ttl` ms at batch 0; returns its fence.
local function grant(lease, fence_key, token, ttl, us)
  local f = next_fence(fence_key, us)
  redis.call('HSET', lease, 'tok', token, 'f', f, 's', '0', 'c', '0')
  redis.call('PEXPIRE', lease, ttl)
  return f
end

-- Whether `token` owns the (unexpired) lease.
local function owns(lease, token)
  return redis.call('HGET', lease, 'tok') == token
end

-- Whether work that needs a holder is on the scope: waiting entries, an
-- in-flight batch, or reports.
local function has_work(queue, pending, burst, run, outbox)
  return redis.call('EXISTS', queue, pending, burst, run, outbox) > 0
end

-- Whether the scope's lease is held, and whether work needs a holder, in one
-- call: EXISTS counts a key once per time it is named, so the lease, named
-- six times, adds 6 and the five kinds of work at most 5 between them.
local function held_and_work(lease, queue, pending, burst, run, outbox)
  local n = redis.call('EXISTS', lease, lease, lease, lease, lease, lease,
    queue, pending, burst, run, outbox)
  return n >= 6, n % 6 > 0
end

local function has_waiting(queue, pending, burst)
  return redis.call('EXISTS', queue, pending, burst) > 0
end

-- Keeps the scope in its bucket's orphan index while work needs a holder,
-- scored with the time its lease lapses (now when nobody holds it), so a sweep
-- reads only scopes whose holder may be gone. Out of the index otherwise.
-- `now` may be left out: the clock is read only when it is needed.
local function reindex(index, member, lease, working, now)
  if not working then
    redis.call('ZREM', index, member)
    return
  end
  local ttl = redis.call('PTTL', lease)
  if ttl < 0 then
    ttl = 0
  end
  redis.call('ZADD', index, int((now or clock()) + ttl), member)
end

-- Dedupe marks. Each mark would cost a key of its own (over 200 bytes of
-- Redis), so marks are fields of hourly hashes instead: the client names a
-- mark `<bucket>:d:<12 bytes of digest>`; the mark lives as field <digest> of
-- the hash `<bucket>:d:<hour>` (the hour it was set, in server time), valued
-- <code><expiry ms, 6 bytes><request digest, 4 bytes>: 11 bytes, so field and
-- value each fit Redis's smallest string allocations once a busy channel's
-- hash outgrows the compact encoding. The hash expires with the last mark set
-- in it. A lookup reads the hours the dedupe TTL spans,
-- newest first, and takes a mark only before its own expiry: marks expire
-- exactly as keys with PX would. The one key name built here, in the slot of
-- the declared mark name (the same hash tag).
local MARK_HOUR = 3600000
local MARK_CODES = {
  run = 'r', hold = 'h', queued = 'q', pending = 'p', slot = 's',
  ['wait-slot'] = 'w', ['dropped-busy'] = 'b', ['dropped-full'] = 'f', cancel = 'c',
}
-- MARK_CODES the other way round (written out: a library's load sees no
-- `pairs`).
local MARK_RECORDED = {
  r = 'run', h = 'hold', q = 'queued', p = 'pending', s = 'slot',
  w = 'wait-slot', b = 'dropped-busy', f = 'dropped-full', c = 'cancel',
}

-- The hour hashes' common prefix of a mark name, and the mark's field.
local function mark_parts(name)
  return string.sub(name, 1, -14) .. ':', string.sub(name, -12)
end

-- 32 bits of SHA-1 of a request id, as 4 bytes. Two requests of one key
-- that share them (one in four billion) are told apart by the replay, which
-- then finds the lease not theirs and answers 'stored': nothing runs twice.
local function request_digest(rid)
  return struct.pack('>I4', tonumber(string.sub(redis.sha1hex(rid), 1, 8), 16))
end

-- The live mark `name` (set at most `ttl` ms ago): (request digest, recorded),
-- or nil. Returns the hour hash and field it was found in as well. Remembers
-- the current hour's hash, where `mark` writes.
local function find_mark(name, ttl, now)
  local prefix, field = mark_parts(name)
  local newest = math.floor(now / MARK_HOUR)
  for h = newest, math.floor((now - ttl) / MARK_HOUR), -1 do
    local key = prefix .. int(h)
    if h == newest then
      looked_up, looked_up_key, looked_up_field = name, key, field
    end
    local v = redis.call('HGET', key, field)
    if v and struct.unpack('>I6', v, 2) > now then
      return string.sub(v, 8), MARK_RECORDED[string.sub(v, 1, 1)], key, field
    end
  end
  return nil
end

-- Sets mark `name` for `ttl` ms, by request `rid`, recording `recorded`.
local function mark(name, ttl, rid, recorded)
  local now = clock()
  local expires = now + tonumber(ttl)
  local key, field = looked_up_key, looked_up_field
  if looked_up ~= name then
    local prefix
    prefix, field = mark_parts(name)
    key = prefix .. int(math.floor(now / MARK_HOUR))
  end
  redis.call('HSET', key, field, MARK_CODES[recorded] .. struct.pack('>I6', expires) .. request_digest(rid))
  -- The hash lives as long as its longest mark: GT extends an expiry; a hash
  -- this HSET created has none yet, and NX sets it.
  local at = int(expires)
  if redis.call('PEXPIREAT', key, at, 'GT') == 0 then
    redis.call('PEXPIREAT', key, at, 'NX')
  end
end

-- Admission steps 2 and 3: the dedupe mark and the subscription gate. Returns a
-- finished reply when the event stops here ({'replay', subscribed, recorded}
-- for a repeat of the same request), else nil; and the subscription bit.
local function gate(mark_name, mark_ttl, subscription, waiting_threads, thread, gate_mode, rid, sub_ttl)
  -- Activity keeps a subscription alive: PEXPIRE renews it and answers
  -- whether there is one (1), in one call.
  local subscribed = redis.call('PEXPIRE', subscription, sub_ttl)
  local by, recorded = find_mark(mark_name, tonumber(mark_ttl), clock())
  if by then
    if by == request_digest(rid) then
      return {'replay', subscribed, recorded}, subscribed
    end
    return {'duplicate', subscribed}, subscribed
  end
  if gate_mode == 'subscribed' and subscribed == 0
    and redis.call('SISMEMBER', waiting_threads, thread) == 0 then
    return {'not-subscribed', subscribed}, subscribed
  end
  return nil, subscribed
end

-- The answer to a repeat of an admission on an exclusive scope. A replayed
-- grant extends the lease by its TTL, as the first answer did: the caller
-- dates its lease from the call that answered.
local function replay(recorded, rid, subscribed, lease, depth_key, ttl)
  if recorded == 'run' or recorded == 'hold' then
    local l = redis.call('HMGET', lease, 'tok', 'f', 's')
    if l[1] == rid and l[3] == '0' then
      redis.call('PEXPIRE', lease, ttl)
      return {recorded, subscribed, l[2]}
    end
    return {'stored', subscribed}
  end
  if recorded == 'queued' then
    return {'queued', subscribed, redis.call('LLEN', depth_key)}
  end
  if recorded == 'pending' then
    return {'pending', subscribed, 0}
  end
  if recorded == 'dropped-busy' then
    return {'dropped', subscribed, 'busy'}
  end
  if recorded == 'dropped-full' then
    return {'dropped', subscribed, 'queue-full'}
  end
  return {'stored', subscribed}
end

-- The report of a stored entry.
local function report(fate, entry)
  local ref = string.match(entry, '^[^|]*|[^|]*|([^\n]*)\n') or '|'
  return 'R' .. fate .. '|' .. ref
end

-- RPUSH of many values, in chunks that stay below Lua's unpack limit.
local function push_all(key, values)
  for i = 1, #values, 1000 do
    redis.call('RPUSH', key, unpack(values, i, math.min(i + 999, #values)))
  end
end

-- Stores the event a 'run' admission grants, in flight as batch 0 of `token`
-- (the caller found no in-flight batch on the scope).
local function run_first(run, items, token, entry, now)
  redis.call('HSET', run, 'o', token, 's', '0', 'a', '1', 'l', '0', 'h', '0', 't', int(now))
  redis.call('RPUSH', items, entry)
end

-- Indexes a scope whose lease was just granted or extended by `ttl` ms.
local function index_held(index, member, ttl, now)
  redis.call('ZADD', index, int(now + ttl), member)
end

-- The in-flight batch, as handed to its holder:
-- {'run', seq, attempt, lapses, handed-out ms, items}.
local function handed(run, items)
  local r = redis.call('HMGET', run, 's', 'a', 'l', 't')
  return {'run', r[1], r[2], r[3], r[4], redis.call('LRANGE', items, 0, -1)}
end

-- An acknowledged batch: a repeat of the acknowledgement answers 'released'
-- for two TTLs, and at least a minute (a caller may take several client
-- timeouts to get through again).
local function remember_ack(ack, ttl)
  redis.call('SET', ack, '1', 'PX', int(math.max(2 * ttl, 60000)))
end

local function was_acked(ack)
  return redis.call('EXISTS', ack) == 1
end

-- What is ready for the holder, in the memory backend's order: every queued
-- entry; the pending debounce event once quiet; the oldest sealed burst batch.
-- Returns {'queue'} (the whole queue, left where it is for the caller to
-- move: its entries need not pass through the script), {'run', entries} or
-- {'wait', ms}, or nil when nothing waits.
local function next_ready(queue, pending, burst, meta, now)
  if redis.call('EXISTS', queue) == 1 then
    return {'queue'}
  end
  local p = redis.call('HMGET', pending, 'e', 'ready')
  if p[1] then
    local ready = tonumber(p[2])
    if ready > now then
      return {'wait', ready - now}
    end
    redis.call('DEL', pending)
    return {'run', {p[1]}}
  end
  if redis.call('EXISTS', burst) == 0 then
    redis.call('DEL', meta)
    return nil
  end
  local head = redis.call('HGET', meta, 'head')
  local b = redis.call('HMGET', meta, 's' .. head, 'f' .. head, 'n' .. head)
  local seals = tonumber(b[1])
  if b[2] ~= '1' and seals > now then
    return {'wait', seals - now}
  end
  local entries = redis.call('LPOP', burst, tonumber(b[3]))
  redis.call('HDEL', meta, 's' .. head, 'f' .. head, 'n' .. head)
  if redis.call('EXISTS', burst) == 1 then
    redis.call('HSET', meta, 'head', int(tonumber(head) + 1))
  else
    redis.call('DEL', meta)
  end
  return {'run', entries}
end

-- Slots. `slots` and `slot_waiters` are sorted sets token -> expiry ms (running,
-- and waiting for a slot); `slot_runs` holds each token's event as
-- "<attempt>|<lapses>|<handed back 0/1>|<fence or 0>|m<max>|<entry>" until its
-- run is acknowledged (<max>: the bound it was admitted with, 0 unbounded, so
-- that its recovery takes a slot under the same bound); `slot_cancels` counts
-- stop requests per running token.

-- A slot run record's parts: attempt, lapses, handed back, fence, max, entry.
-- A record written before the bound was kept has no "m<max>|": max ''.
local function split_slot_run(v)
  local a, l, h, f, rest = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  local max, entry = string.match(rest, '^m(%d*)|(.*)$')
  if not max then
    return a, l, h, f, '', rest
  end
  return a, l, h, f, max, entry
end

-- Drops lapsed slots and reservations (their runs stay, for recovery).
local function purge_slots(slots, cancels, waiters, now)
  local gone = redis.call('ZRANGEBYSCORE', slots, '-inf', now)
  if #gone > 0 then
    redis.call('ZREM', slots, unpack(gone))
    redis.call('HDEL', cancels, unpack(gone))
  end
  redis.call('ZREMRANGEBYSCORE', waiters, '-inf', now)
end

-- Keeps the scope in its bucket's slot-orphan index while it has runs, scored
-- with the earliest time one of them may lose its holder (now for a run that
-- has neither a slot nor a reservation).
local function reindex_slots(index, member, slots, waiters, runs, now)
  local n = redis.call('HLEN', runs)
  if n == 0 then
    redis.call('ZREM', index, member)
    return
  end
  local held = redis.call('ZCARD', slots) + redis.call('ZCARD', waiters)
  local score = now
  if n <= held then
    score = math.huge
    for _, key in ipairs({slots, waiters}) do
      local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      if first[2] then
        score = math.min(score, tonumber(first[2]))
      end
    end
  end
  redis.call('ZADD', index, score, member)
end

-- The fence of a token's slot, from its run record.
local function slot_fence(runs, token)
  local v = redis.call('HGET', runs, token)
  if not v then
    return '0'
  end
  return string.match(v, '^[^|]*|[^|]*|[^|]*|([^|]*)|') or '0'
end

-- Grants a slot to `token` (whose run is stored); returns its fence.
local function grant_slot(slots, runs, fence_key, token, ttl, now, us)
  local f = next_fence(fence_key, us)
  redis.call('ZADD', slots, int(now + ttl), token)
  local v = redis.call('HGET', runs, token)
  if v then
    local a, l, h, rest = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|[^|]*|(.*)$')
    redis.call('HSET', runs, token, a .. '|' .. l .. '|' .. h .. '|' .. f .. '|' .. rest)
  end
  return f
end

-- ---------------------------------------------------------------------------
