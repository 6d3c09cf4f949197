-- force_release.lua: an operator releases a stuck holder, fenced: only the
-- live lease (or live slot) whose fence is the one the operator saw goes.
-- Nothing in the scope's care is touched: the scope is indexed as needing a
-- holder now, so the next sweep hands its work over.
--
-- KEYS[1]  the scope's lease              (hash, PX lease TTL)
-- KEYS[2]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[3]  the scope's queue              (list)
-- KEYS[4]  the scope's pending event      (hash)
-- KEYS[5]  the scope's burst members      (list)
-- KEYS[6]  the scope's in-flight batch    (hash)
-- KEYS[7]  the scope's outbox             (list)
-- KEYS[8]  the scope's slots              (sorted set token -> expiry ms)
-- KEYS[9]  the scope's slot stop counts   (hash)
-- KEYS[10] the scope's slot waiters       (sorted set token -> expiry ms)
-- KEYS[11] the scope's slot runs          (hash token -> run record)
-- KEYS[12] the bucket's slot-orphan index (sorted set scope -> score)
-- ARGV[1] the fence the operator saw
-- ARGV[2] the scope's member in the indexes
--
-- Reply: 'released' | 'stale'

local now = clock()
if redis.call('HGET', KEYS[1], 'f') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  reindex(KEYS[2], ARGV[2], KEYS[1], has_work(KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]), now)
  return 'released'
end
purge_slots(KEYS[8], KEYS[9], KEYS[10], now)
for _, token in ipairs(redis.call('ZRANGE', KEYS[8], 0, -1)) do
  if slot_fence(KEYS[11], token) == ARGV[1] then
    redis.call('ZREM', KEYS[8], token)
    redis.call('HDEL', KEYS[9], token)
    reindex_slots(KEYS[12], ARGV[2], KEYS[8], KEYS[10], KEYS[11], now)
    return 'released'
  end
end
return 'stale'
