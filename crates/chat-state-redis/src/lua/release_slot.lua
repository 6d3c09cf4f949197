-- release_slot.lua: frees a concurrency slot (finish and release of a slot
-- lease).
--
-- KEYS[1] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[2] the scope's slot cancel flags  (set of tokens)
-- ARGV[1] the slot's token
--
-- Atomic: removing the slot and its cancel flag.
-- Reply: 1 when the slot was live, 0 when it had expired or was gone

local now = clock()
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('SREM', KEYS[2], ARGV[1])
slots_keep_alive(KEYS[1], KEYS[2], now)
if expires and tonumber(expires) > now then
  return 1
end
return 0
