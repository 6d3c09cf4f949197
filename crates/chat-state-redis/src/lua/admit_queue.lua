-- admit_queue.lua: the ack path under `Queue`, in one atomic step.
--
-- KEYS[1] dedupe mark of the event       (string, PX dedupe TTL)
-- KEYS[2] subscription of its thread     (string)
-- KEYS[3] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[4] the bucket's fence counter     (string, no TTL)
-- KEYS[5] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6] the scope's queue              (list of entries, oldest first)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the new lease's token
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
-- ARGV[6] max_size
-- ARGV[7] on_full: 'drop-oldest' | 'drop-newest'
-- ARGV[8] entry TTL (ms)
-- ARGV[9] the event (serialized)
--
-- Atomic: dedupe check and mark, the gate, and the queue decision: grant the
-- lease (taking over entries a dead holder left), or append with eviction.
-- Reply: {'duplicate'|'not-subscribed', subscribed}
--        {'run', subscribed, fence}
--        {'hold', subscribed, fence, now, false}
--        {'queued', subscribed, depth, now, evicted entry | false}
--        {'dropped', subscribed, 'queue-full'}

local stop, subscribed = gate(KEYS[1], KEYS[2], ARGV[1])
if stop then
  return stop
end
local now, us = clock()
local entry = int(now) .. '|' .. int(now + tonumber(ARGV[8])) .. '|' .. ARGV[9]
mark(KEYS[1], ARGV[2])

if redis.call('EXISTS', KEYS[3]) == 0 then
  local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
  if redis.call('LLEN', KEYS[6]) == 0 then
    return {'run', subscribed, fence}
  end
  -- Entries outlived their holder: the new holder drains them with this one.
  redis.call('RPUSH', KEYS[6], entry)
  reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
  return {'hold', subscribed, fence, now, false}
end

local max = tonumber(ARGV[6])
if ARGV[7] == 'drop-newest' and redis.call('LLEN', KEYS[6]) >= max then
  return {'dropped', subscribed, 'queue-full'}
end
local depth = redis.call('RPUSH', KEYS[6], entry)
local evicted = false
if depth > max then
  evicted = redis.call('LPOP', KEYS[6])
  depth = depth - 1
end
reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
return {'queued', subscribed, depth, now, evicted}
