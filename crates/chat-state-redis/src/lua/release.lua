-- release.lua: gives a scope's exclusive lease up without taking what waits
-- (shutdown), so the next admit or a sweep takes the scope over at once.
--
-- KEYS[1] the scope's lease              (hash, PX lease TTL)
-- KEYS[2] the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[3] the scope's in-flight batch    (hash)
-- KEYS[4] its entries                    (list)
-- KEYS[5] this batch's acknowledgement   (string, PX)
-- KEYS[6] the scope's queue              (list)
-- KEYS[7] the scope's pending event      (hash)
-- KEYS[8] the scope's burst members      (list)
-- KEYS[9] the scope's outbox             (list)
-- ARGV[1] the holder's token
-- ARGV[2] the batch it holds (its lease's seq)
-- ARGV[3] 'done' (acknowledge the batch) | 'handback' (leave it in flight)
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
--
-- Atomic: the batch's acknowledgement or hand-back (a handed-back batch is
-- adopted without counting a lapse), the token check, deleting the lease, and
-- scoring the scope's leftover work as orphaned now.
-- Reply: 1 when the token still owned the lease, or its batch was acknowledged
--        ('done', now or by an earlier call) or left in flight ('handback');
--        0 when the batch is another holder's now

local tok, seq = ARGV[1], ARGV[2]
local now = clock()
local r = redis.call('HMGET', KEYS[3], 'o', 's')
local own = r[1] == tok and r[2] == seq
local answer = 0
if own then
  answer = 1
end
local held = owns(KEYS[1], tok)
if ARGV[3] == 'done' then
  if own then
    redis.call('DEL', KEYS[3], KEYS[4])
  elseif was_acked(KEYS[5]) then
    answer = 1
  end
  if own or held then
    remember_ack(KEYS[5], tonumber(ARGV[4]))
  end
elseif own then
  redis.call('HSET', KEYS[3], 'h', '1')
end
if held then
  redis.call('DEL', KEYS[1])
  answer = 1
end
reindex(KEYS[2], ARGV[5], KEYS[1], has_work(KEYS[6], KEYS[7], KEYS[8], KEYS[3], KEYS[9]), now)
return answer
