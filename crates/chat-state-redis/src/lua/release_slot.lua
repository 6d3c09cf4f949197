-- release_slot.lua: a slot's run ends (finish and release of a slot lease).
--
-- KEYS[1] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[2] the scope's slot stop counts   (hash token -> count)
-- KEYS[3] the scope's slot waiters       (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot runs          (hash token -> run record)
-- KEYS[5] the bucket's slot-orphan index (sorted set scope -> ms)
-- KEYS[6] this run's acknowledgement     (string, PX)
-- ARGV[1] the slot's token
-- ARGV[2] 'done' (acknowledge the run) | 'handback' (leave it for recovery)
-- ARGV[3] slot TTL (ms)
-- ARGV[4] the scope's member in the slot-orphan index
--
-- Atomic: freeing the slot (or a waiter's reservation), and acknowledging the
-- run — unless recovery adopted it already — or handing it back (adopting it
-- is then not a lapse, and the sweep finds it at once).
-- Reply: 1 the slot was live, or the run acknowledged / handed back; else 0

local tok = ARGV[1]
local now = clock()
local expires = redis.call('ZSCORE', KEYS[1], tok)
local live = expires and tonumber(expires) > now
redis.call('ZREM', KEYS[1], tok)
redis.call('ZREM', KEYS[3], tok)
redis.call('HDEL', KEYS[2], tok)
local answer = 0
if live then
  answer = 1
end
if ARGV[2] == 'done' then
  if redis.call('HDEL', KEYS[4], tok) == 1 then
    remember_ack(KEYS[6], tonumber(ARGV[3]))
    answer = 1
  elseif was_acked(KEYS[6]) then
    answer = 1
  end
else
  local v = redis.call('HGET', KEYS[4], tok)
  if v then
    local a, l, rest = string.match(v, '^([^|]*)|([^|]*)|[^|]*|(.*)$')
    redis.call('HSET', KEYS[4], tok, a .. '|' .. l .. '|1|' .. rest)
    answer = 1
  end
end
reindex_slots(KEYS[5], ARGV[4], KEYS[1], KEYS[3], KEYS[4], now)
return answer
