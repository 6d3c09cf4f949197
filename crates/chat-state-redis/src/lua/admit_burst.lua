-- admit_burst.lua: the ack path under `Burst`, in one atomic step.
--
-- KEYS[1] dedupe mark of the event       (string, PX dedupe TTL)
-- KEYS[2] subscription of its thread     (string)
-- KEYS[3] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[4] the bucket's fence counter     (string, no TTL)
-- KEYS[5] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6] the scope's burst members      (list of entries, batch after batch)
-- KEYS[7] the scope's burst batches      (hash: head, tail, and per batch n:
--                                         s<n> seals at ms, f<n> full, n<n> size)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the new lease's token
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
-- ARGV[6] window (ms)
-- ARGV[7] max_batch (0: none)
-- ARGV[8] max_waiting
-- ARGV[9] the event (serialized)
--
-- Atomic: dedupe check, the gate, the max_waiting bound (refused before the
-- mark), joining the open window or opening one, sealing at max_batch, and
-- granting the lease when it is free.
-- Reply: {'duplicate'|'not-subscribed'|'full', subscribed}
--        {'hold', subscribed, fence, now, false}
--        {'queued', subscribed, depth, now, false}

local stop, subscribed = gate(KEYS[1], KEYS[2], ARGV[1])
if stop then
  return stop
end
local depth = redis.call('LLEN', KEYS[6])
if depth >= tonumber(ARGV[8]) then
  return {'full', subscribed}
end
local now, us = clock()
mark(KEYS[1], ARGV[2])

local meta = KEYS[7]
local tail = 0
if depth == 0 then
  redis.call('DEL', meta)
else
  tail = tonumber(redis.call('HGET', meta, 'tail'))
end
local sealed = true
if tail > 0 then
  local b = redis.call('HMGET', meta, 's' .. tail, 'f' .. tail)
  sealed = b[2] == '1' or tonumber(b[1]) <= now
end
if sealed then
  tail = tail + 1
  redis.call('HSET', meta, 'tail', int(tail), 's' .. tail, int(now + tonumber(ARGV[6])),
    'f' .. tail, '0', 'n' .. tail, '0')
  if depth == 0 then
    redis.call('HSET', meta, 'head', int(tail))
  end
end
local size = redis.call('HINCRBY', meta, 'n' .. tail, 1)
local max_batch = tonumber(ARGV[7])
if max_batch > 0 and size >= max_batch then
  redis.call('HSET', meta, 'f' .. tail, '1')
end
depth = redis.call('RPUSH', KEYS[6], int(now) .. '||' .. ARGV[9])

if redis.call('EXISTS', KEYS[3]) == 0 then
  local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
  reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
  return {'hold', subscribed, fence, now, false}
end
reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
return {'queued', subscribed, depth, now, false}
