-- request_cancel.lua: a control event (a stop request) bypasses the strategy:
-- it is deduplicated and recorded on whoever holds the scope.
--
-- KEYS[1] dedupe mark of the control event (string, PX dedupe TTL)
-- KEYS[2] the scope's lease                (hash {tok, cancel}, PX lease TTL)
-- KEYS[3] the scope's slots                (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot cancel flags    (set of tokens)
-- ARGV[1] dedupe TTL (ms)
--
-- Atomic: dedupe check and mark, and flagging the lease (or every live slot).
-- Reply: 'duplicate' | 'recorded' | 'no-holder'

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 'duplicate'
end
mark(KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'cancel', '1')
  return 'recorded'
end
local now = clock()
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local live = redis.call('ZRANGE', KEYS[3], 0, -1)
if #live == 0 then
  return 'no-holder'
end
for _, token in ipairs(live) do
  redis.call('SADD', KEYS[4], token)
end
slots_keep_alive(KEYS[3], KEYS[4], now)
return 'recorded'
