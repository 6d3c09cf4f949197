-- renew_slot.lua: extends a concurrency slot if it has not expired.
--
-- KEYS[1] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[2] the scope's slot cancel flags  (set of tokens)
-- ARGV[1] the slot's token
-- ARGV[2] slot TTL (ms)
--
-- Atomic: the expiry check and the new expiry; never resurrects a slot.
-- Reply: {'lost'} | {'renewed', cancel requested 0|1}

local now = clock()
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expires or tonumber(expires) <= now then
  return {'lost'}
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
slots_keep_alive(KEYS[1], KEYS[2], now)
return {'renewed', redis.call('SISMEMBER', KEYS[2], ARGV[1])}
