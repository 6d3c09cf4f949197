-- admit_drop.lua: the ack path under `Drop`, in one atomic step.
--
-- KEYS[1] dedupe mark of the event       (string, PX dedupe TTL)
-- KEYS[2] subscription of its thread     (string)
-- KEYS[3] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[4] the bucket's fence counter     (string, no TTL)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the new lease's token
-- ARGV[4] lease TTL (ms)
--
-- Atomic: dedupe check and mark, the subscription gate, and the lease grant.
-- Reply: {'duplicate'|'not-subscribed', subscribed}
--        {'run', subscribed, fence}
--        {'dropped', subscribed, 'busy'}

local stop, subscribed = gate(KEYS[1], KEYS[2], ARGV[1])
if stop then
  return stop
end
mark(KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {'dropped', subscribed, 'busy'}
end
local _, us = clock()
return {'run', subscribed, grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)}
