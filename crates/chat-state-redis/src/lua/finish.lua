-- finish.lua: release-or-handoff for the holder of a scope's exclusive lease,
-- in one atomic step.
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
-- Atomic: the token check, clearing a stop request, extending the lease, and
-- then either handing over what is ready (the lease is kept) or deleting the
-- lease when nothing waits. As two steps, an entry admitted in between would
-- be stranded.
-- Reply: {'lost'} | {'released'} | {'wait', ms} | {'run', now, entries}

if not owns(KEYS[1], ARGV[1]) then
  return {'lost'}
end
local now = clock()
redis.call('HSET', KEYS[1], 'cancel', '0')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local ready = next_ready(KEYS[3], KEYS[4], KEYS[5], KEYS[6], now)
if not ready then
  redis.call('DEL', KEYS[1])
  reindex(KEYS[2], ARGV[3], KEYS[1], false, now)
  return {'released'}
end
reindex(KEYS[2], ARGV[3], KEYS[1], has_waiting(KEYS[3], KEYS[4], KEYS[5]), now)
return ready
