-- renew_slot.lua: extends a concurrency slot if it has not lapsed.
--
-- KEYS[1] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[2] the scope's slot stop counts   (hash token -> count)
-- KEYS[3] the scope's slot waiters       (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot runs          (hash token -> run record)
-- KEYS[5] the bucket's slot-orphan index (sorted set scope -> ms)
-- ARGV[1] the slot's token
-- ARGV[2] slot TTL (ms)
-- ARGV[3] the scope's member in the slot-orphan index
--
-- Atomic: the expiry check and the new expiry; never resurrects a slot.
-- Reply: {'lost'} | {'renewed', stop requests}

local now = clock()
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expires or tonumber(expires) <= now then
  return {'lost'}
end
redis.call('ZADD', KEYS[1], 'XX', int(now + tonumber(ARGV[2])), ARGV[1])
reindex_slots(KEYS[5], ARGV[3], KEYS[1], KEYS[3], KEYS[4], now)
return {'renewed', tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')}
