-- admit_debounce.lua: the ack path under `Debounce`, in one atomic step.
--
-- KEYS[1] dedupe mark of the event       (string, PX dedupe TTL)
-- KEYS[2] subscription of its thread     (string)
-- KEYS[3] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[4] the bucket's fence counter     (string, no TTL)
-- KEYS[5] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6] the scope's pending event      (hash {e = entry, ready = ms})
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the new lease's token
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
-- ARGV[6] quiet interval (ms)
-- ARGV[7] the event (serialized)
--
-- Atomic: dedupe check and mark, the gate, replacing the pending event and
-- restarting the quiet interval, and granting the lease when it is free. A
-- pending event found under a free lease was left by a dead or paused holder:
-- it is returned as superseded, never silently overwritten.
-- Reply: {'duplicate'|'not-subscribed', subscribed}
--        {'hold', subscribed, fence, now, superseded entry | false}
--        {'pending', subscribed, now, superseded entry | false}

local stop, subscribed = gate(KEYS[1], KEYS[2], ARGV[1])
if stop then
  return stop
end
local now, us = clock()
mark(KEYS[1], ARGV[2])
local replaced = redis.call('HGET', KEYS[6], 'e')
redis.call('HSET', KEYS[6], 'e', int(now) .. '||' .. ARGV[7],
  'ready', int(now + tonumber(ARGV[6])))

if redis.call('EXISTS', KEYS[3]) == 0 then
  local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
  reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
  return {'hold', subscribed, fence, now, replaced}
end
reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
return {'pending', subscribed, now, replaced}
