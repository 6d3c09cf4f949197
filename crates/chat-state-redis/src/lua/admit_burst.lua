-- admit_burst.lua: the ack path under `Burst`, in one atomic step.
--
-- KEYS[1]  dedupe mark of the event       (named; a field of an hourly hash)
-- KEYS[2]  subscription of its thread     (string)
-- KEYS[3]  the scope's lease              (hash, PX lease TTL)
-- KEYS[4]  the bucket's fence counter     (string, no TTL)
-- KEYS[5]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6]  the scope's burst members      (list of entries, batch after batch)
-- KEYS[7]  the scope's burst batches      (hash: head, tail, and per batch n:
--                                          s<n> seals at ms, f<n> full, n<n> size)
-- KEYS[8]  threads with waiting work      (set)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[#ARGV] the subscription TTL (ms) an admission in a subscribed thread renews
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the request id (the new lease's token)
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
-- ARGV[6] the event's thread
-- ARGV[7] the event ("<ref>\n<JSON>")
-- ARGV[8] window (ms)
-- ARGV[9] max_batch (0: none)
-- ARGV[10] max_waiting
-- ARGV[11] entry TTL (ms): a member older than this when its batch is handed
--          over is expired
--
-- Atomic: dedupe check, the gate, the max_waiting bound (refused before the
-- mark), joining the open window or opening one, sealing at max_batch, and
-- granting the lease when it is free.
-- Reply: {'duplicate'|'not-subscribed'|'full'|'stored', subscribed}
--        {'hold', subscribed, fence}
--        {'queued', subscribed, depth}

local stop, subscribed = gate(KEYS[1], ARGV[2], KEYS[2], KEYS[8], ARGV[6], ARGV[1], ARGV[3], ARGV[#ARGV])
if stop then
  if stop[1] == 'replay' then
    return replay(stop[3], ARGV[3], subscribed, KEYS[3], KEYS[6], ARGV[4])
  end
  return stop
end
local depth = redis.call('LLEN', KEYS[6])
if depth >= tonumber(ARGV[10]) then
  return {'full', subscribed}
end
local now, us = clock()

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
  redis.call('HSET', meta, 'tail', int(tail), 's' .. tail, int(now + tonumber(ARGV[8])),
    'f' .. tail, '0', 'n' .. tail, '0')
  if depth == 0 then
    redis.call('HSET', meta, 'head', int(tail))
  end
end
local size = redis.call('HINCRBY', meta, 'n' .. tail, 1)
local max_batch = tonumber(ARGV[9])
if max_batch > 0 and size >= max_batch then
  redis.call('HSET', meta, 'f' .. tail, '1')
end
depth = redis.call('RPUSH', KEYS[6],
  int(now) .. '|' .. int(now + tonumber(ARGV[11])) .. '|' .. ARGV[7])
redis.call('SADD', KEYS[8], ARGV[6])

if redis.call('EXISTS', KEYS[3]) == 0 then
  mark(KEYS[1], ARGV[2], ARGV[3], 'hold')
  local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
  index_held(KEYS[5], ARGV[5], tonumber(ARGV[4]), now)
  return {'hold', subscribed, fence}
end
mark(KEYS[1], ARGV[2], ARGV[3], 'queued')
reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
return {'queued', subscribed, depth}
