-- admit_concurrent.lua: the ack path under `Concurrent`, in one atomic step.
--
-- KEYS[1] dedupe mark of the event       (named; a field of an hourly hash)
-- KEYS[2] subscription of its thread     (string)
-- KEYS[3] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot stop counts   (hash token -> count)
-- KEYS[5] the scope's slot waiters       (sorted set token -> expiry ms)
-- KEYS[6] the scope's slot runs          (hash token -> run record)
-- KEYS[7] the bucket's fence counter     (string, no TTL)
-- KEYS[8] the bucket's slot-orphan index (sorted set scope -> ms)
-- KEYS[9] threads with waiting work      (set; never written here)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[#ARGV] the subscription TTL (ms) an admission in a subscribed thread renews
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the request id (the slot's token)
-- ARGV[4] slot TTL (ms)
-- ARGV[5] max slots (0: unbounded)
-- ARGV[6] the scope's member in the slot-orphan index
-- ARGV[7] the event's thread
-- ARGV[8] the event ("<ref>\n<JSON>")
--
-- Atomic: dedupe check and mark, the gate, storing the event under the request
-- id, and taking a slot or a place among the waiters.
-- Reply: {'duplicate'|'not-subscribed'|'waiting-for-slot'|'stored', subscribed}
--        {'run', subscribed, fence}

local stop, subscribed = gate(KEYS[1], ARGV[2], KEYS[2], KEYS[9], ARGV[7], ARGV[1], ARGV[3], ARGV[#ARGV])
local now, us = clock()
if stop then
  if stop[1] ~= 'replay' then
    return stop
  end
  local rid = ARGV[3]
  local slot = redis.call('ZSCORE', KEYS[3], rid)
  if stop[3] == 'slot' and slot and tonumber(slot) > now then
    -- A replayed grant extends the slot, as the first answer did.
    redis.call('ZADD', KEYS[3], 'XX', int(now + tonumber(ARGV[4])), rid)
    return {'run', subscribed, slot_fence(KEYS[6], rid)}
  end
  if stop[3] == 'wait-slot' and (slot or redis.call('ZSCORE', KEYS[5], rid)) then
    return {'waiting-for-slot', subscribed}
  end
  return {'stored', subscribed}
end
purge_slots(KEYS[3], KEYS[4], KEYS[5], now)
local ttl = tonumber(ARGV[4])
local max = tonumber(ARGV[5])
redis.call('HSET', KEYS[6], ARGV[3], '1|0|0|0|m' .. ARGV[5] .. '|' .. int(now) .. '||' .. ARGV[8])
if max == 0 or redis.call('ZCARD', KEYS[3]) < max then
  mark(KEYS[1], ARGV[2], ARGV[3], 'slot')
  local fence = grant_slot(KEYS[3], KEYS[6], KEYS[7], ARGV[3], ttl, now, us)
  reindex_slots(KEYS[8], ARGV[6], KEYS[3], KEYS[5], KEYS[6], now)
  return {'run', subscribed, fence}
end
mark(KEYS[1], ARGV[2], ARGV[3], 'wait-slot')
redis.call('ZADD', KEYS[5], int(now + ttl), ARGV[3])
reindex_slots(KEYS[8], ARGV[6], KEYS[3], KEYS[5], KEYS[6], now)
return {'waiting-for-slot', subscribed}
