-- claim.lua: recovery. Grants the lease of a scope the sweep found in its
-- bucket's orphan index, if entries still wait on it and nobody holds it.
--
-- KEYS[1] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[2] the bucket's fence counter     (string, no TTL)
-- KEYS[3] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[4] the scope's queue              (list)
-- KEYS[5] the scope's pending event      (hash {e, ready})
-- KEYS[6] the scope's burst members      (list)
-- ARGV[1] the scope's member in the orphan index
-- ARGV[2] the new lease's token
-- ARGV[3] lease TTL (ms)
--
-- Atomic: the orphan check and the grant. A held scope is rescored with its
-- lease's expiry; a scope with nothing waiting leaves the index.
-- Reply: the fence of the new lease, or false

local now, us = clock()
local waiting = has_waiting(KEYS[4], KEYS[5], KEYS[6])
if redis.call('EXISTS', KEYS[1]) == 1 or not waiting then
  reindex(KEYS[3], ARGV[1], KEYS[1], waiting, now)
  return false
end
local fence = grant(KEYS[1], KEYS[2], ARGV[2], ARGV[3], us)
reindex(KEYS[3], ARGV[1], KEYS[1], true, now)
return fence
