-- acquire_slot.lua: a waiter (an event that got WaitingForSlot, or a recovered
-- slot run) takes one of a scope's `max` slots.
--
-- KEYS[1] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[2] the scope's slot stop counts   (hash token -> count)
-- KEYS[3] the scope's slot waiters       (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot runs          (hash token -> run record)
-- KEYS[5] the bucket's fence counter     (string, no TTL)
-- KEYS[6] the bucket's slot-orphan index (sorted set scope -> ms)
-- ARGV[1] the waiter's token
-- ARGV[2] slot TTL (ms)
-- ARGV[3] max slots (0: unbounded)
-- ARGV[4] the scope's member in the slot-orphan index
--
-- Atomic: dropping lapsed slots, counting, and moving the waiter to a slot —
-- or extending its reservation. A repeat after the grant returns the grant.
-- Reply: {'granted', fence} | {'full'} | {'gone'}

local now, us = clock()
local tok, ttl, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
purge_slots(KEYS[1], KEYS[2], KEYS[3], now)
if redis.call('ZSCORE', KEYS[1], tok) then
  -- A repeat after the grant: the same grant, extended as the first was.
  redis.call('ZADD', KEYS[1], 'XX', int(now + ttl), tok)
  reindex_slots(KEYS[6], ARGV[4], KEYS[1], KEYS[3], KEYS[4], now)
  return {'granted', slot_fence(KEYS[4], tok)}
end
if not redis.call('ZSCORE', KEYS[3], tok) or redis.call('HEXISTS', KEYS[4], tok) == 0 then
  return {'gone'}
end
if max > 0 and redis.call('ZCARD', KEYS[1]) >= max then
  redis.call('ZADD', KEYS[3], int(now + ttl), tok)
  reindex_slots(KEYS[6], ARGV[4], KEYS[1], KEYS[3], KEYS[4], now)
  return {'full'}
end
redis.call('ZREM', KEYS[3], tok)
local fence = grant_slot(KEYS[1], KEYS[4], KEYS[5], tok, ttl, now, us)
reindex_slots(KEYS[6], ARGV[4], KEYS[1], KEYS[3], KEYS[4], now)
return {'granted', fence}
