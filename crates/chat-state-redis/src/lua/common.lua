-- common.lua: helpers prepended to every scope script when it is built
-- (`concat!` in scripts.rs), so each script stays one atomic EVALSHA.
--
-- Nothing here builds a key name: every key a script touches arrives in KEYS,
-- and all of them share the scope's hash tag.
--
-- Conventions shared by the scripts:
--   * Time is the server's (TIME), in milliseconds since the Unix epoch.
--     Lease and slot expiry is Redis's own (PEXPIRE, sorted-set scores).
--   * A waiting entry is one string: "<admitted ms>|<expires ms or empty>|<event>".
--     Scripts return entries as stored, together with `now`, and the client
--     reads the two times from that prefix.
--   * The lease is a hash {tok, cancel} with a PX expiry: expired == absent.

-- The server's clock: (milliseconds, microseconds) since the Unix epoch.
local function clock()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

local function int(n)
  return string.format('%d', n)
end

-- The next fencing number of the bucket: max(last + 1, server time in µs). The
-- counter key has no TTL (one per bucket, so a bounded number of keys), which
-- keeps fences growing across grants on a scope even after its keys are gone;
-- the time floor keeps them growing if the counter itself is ever lost.
local function next_fence(fence_key, us)
  local fence = math.max(tonumber(redis.call('GET', fence_key) or '0') + 1, us)
  local f = int(fence)
  redis.call('SET', fence_key, f)
  return f
end

-- Grants the scope's exclusive lease to `token` for `ttl` ms; returns its fence.
local function grant(lease, fence_key, token, ttl, us)
  local f = next_fence(fence_key, us)
  redis.call('DEL', lease)
  redis.call('HSET', lease, 'tok', token, 'cancel', '0')
  redis.call('PEXPIRE', lease, ttl)
  return f
end

-- Whether `token` owns the (unexpired) lease.
local function owns(lease, token)
  return redis.call('HGET', lease, 'tok') == token
end

-- Keeps the scope in its bucket's orphan index while entries wait on it,
-- scored with the time its lease lapses (now when nobody holds it), so a sweep
-- reads only scopes whose holder may be gone. Out of the index otherwise.
local function reindex(index, member, lease, waiting, now)
  if not waiting then
    redis.call('ZREM', index, member)
    return
  end
  local ttl = redis.call('PTTL', lease)
  if ttl < 0 then
    ttl = 0
  end
  redis.call('ZADD', index, now + ttl, member)
end

-- Admission steps 2 and 3: the dedupe mark and the subscription gate. Returns a
-- finished reply when the event stops here, else nil and the subscription bit.
local function gate(mark, subscription, gate_mode)
  local subscribed = redis.call('EXISTS', subscription)
  if redis.call('EXISTS', mark) == 1 then
    return {'duplicate', subscribed}, subscribed
  end
  if gate_mode == 'subscribed' and subscribed == 0 then
    return {'not-subscribed', subscribed}, subscribed
  end
  return nil, subscribed
end

local function mark(key, ttl)
  redis.call('SET', key, '1', 'PX', ttl)
end

-- Slots: a sorted set token -> expiry (ms). The set and its cancel flags live
-- as long as the longest slot.
local function slots_keep_alive(slots, cancels, now)
  local top = redis.call('ZRANGE', slots, -1, -1, 'WITHSCORES')
  if top[2] == nil then
    redis.call('DEL', slots, cancels)
    return
  end
  local ttl = math.max(tonumber(top[2]) - now, 1)
  redis.call('PEXPIRE', slots, ttl)
  if redis.call('EXISTS', cancels) == 1 then
    redis.call('PEXPIRE', cancels, ttl)
  end
end

-- Takes one of `max` slots for `token`; returns its fence, or false when full.
local function take_slot(slots, cancels, fence_key, token, ttl, max)
  local now, us = clock()
  redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
  if redis.call('ZCARD', slots) >= max then
    return false
  end
  local f = next_fence(fence_key, us)
  redis.call('ZADD', slots, now + ttl, token)
  slots_keep_alive(slots, cancels, now)
  return f
end

-- What is ready for the holder, in the memory backend's order: every queued
-- entry; the pending debounce event once quiet; the oldest sealed burst batch.
-- Returns {'run', now, entries} or {'wait', ms}, or nil when nothing waits.
local function next_ready(queue, pending, burst, meta, now)
  if redis.call('EXISTS', queue) == 1 then
    local entries = redis.call('LRANGE', queue, 0, -1)
    redis.call('DEL', queue)
    return {'run', now, entries}
  end
  local p = redis.call('HMGET', pending, 'e', 'ready')
  if p[1] then
    local ready = tonumber(p[2])
    if ready > now then
      return {'wait', ready - now}
    end
    redis.call('DEL', pending)
    return {'run', now, {p[1]}}
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
  return {'run', now, entries}
end

local function has_waiting(queue, pending, burst)
  return redis.call('EXISTS', queue, pending, burst) > 0
end

-- ---------------------------------------------------------------------------
