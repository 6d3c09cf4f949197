-- release.lua: gives a scope's exclusive lease up without taking what waits
-- (shutdown), so the next admit or a sweep takes the scope over at once.
--
-- KEYS[1] the scope's lease              (hash {tok, cancel}, PX lease TTL)
-- KEYS[2] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[3] the scope's queue              (list)
-- KEYS[4] the scope's pending event      (hash {e, ready})
-- KEYS[5] the scope's burst members      (list)
-- ARGV[1] the holder's token
-- ARGV[2] the scope's member in the orphan index
--
-- Atomic: the token check, deleting the lease, and scoring waiting entries as
-- orphaned now.
-- Reply: 1 released, 0 the token did not own the scope

if not owns(KEYS[1], ARGV[1]) then
  return 0
end
local now = clock()
redis.call('DEL', KEYS[1])
reindex(KEYS[2], ARGV[2], KEYS[1], has_waiting(KEYS[3], KEYS[4], KEYS[5]), now)
return 1
