-- renew.lua: extends a scope's exclusive lease if the token still owns it.
--
-- KEYS[1] the scope's lease              (hash, PX lease TTL)
-- KEYS[2] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- ARGV[1] the holder's token
-- ARGV[2] lease TTL (ms)
-- ARGV[3] the scope's member in the orphan index
--
-- Atomic: the token check and the new expiry (in the index too, when work is
-- on the scope). An expired lease is absent, so it is never resurrected.
-- Reply: {'lost'} | {'renewed', stop requests since the batch was handed out}

if not owns(KEYS[1], ARGV[1]) then
  return {'lost'}
end
local now = clock()
local ttl = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'XX', int(now + ttl), ARGV[3])
return {'renewed', tonumber(redis.call('HGET', KEYS[1], 'c') or '0')}
