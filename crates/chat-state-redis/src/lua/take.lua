-- take.lua: the holder takes what is ready without ever releasing, in one
-- atomic step.
--
-- KEYS[1] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[2] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[3] the scope's queue              (list)
-- KEYS[4] the scope's pending event      (hash {e, ready})
-- KEYS[5] the scope's burst members      (list)
-- KEYS[6] the scope's burst batches      (hash)
-- ARGV[1] the holder's token
-- ARGV[2] lease TTL (ms)
-- ARGV[3] the scope's member in the orphan index
--
-- Atomic: the token check, extending the lease, and handing over what is ready.
-- Reply: {'lost'} | {'empty'} | {'wait', ms} | {'run', now, entries}

if not owns(KEYS[1], ARGV[1]) then
  return {'lost'}
end
local now = clock()
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local ready = next_ready(KEYS[3], KEYS[4], KEYS[5], KEYS[6], now)
reindex(KEYS[2], ARGV[3], KEYS[1], has_waiting(KEYS[3], KEYS[4], KEYS[5]), now)
if not ready then
  return {'empty'}
end
return ready
