-- admit_concurrent.lua: the ack path under `Concurrent`, in one atomic step.
--
-- KEYS[1] dedupe mark of the event       (string, PX dedupe TTL)
-- KEYS[2] subscription of its thread     (string)
-- KEYS[3] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot cancel flags  (set of tokens)
-- KEYS[5] the bucket's fence counter     (string, no TTL)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the new slot's token
-- ARGV[4] slot TTL (ms)
-- ARGV[5] max slots (0: unbounded, no slot kept)
--
-- Atomic: dedupe check and mark, the gate, and taking a slot.
-- Reply: {'duplicate'|'not-subscribed'|'unlocked'|'waiting-for-slot', subscribed}
--        {'run', subscribed, fence}

local stop, subscribed = gate(KEYS[1], KEYS[2], ARGV[1])
if stop then
  return stop
end
mark(KEYS[1], ARGV[2])
local max = tonumber(ARGV[5])
if max == 0 then
  return {'unlocked', subscribed}
end
local fence = take_slot(KEYS[3], KEYS[4], KEYS[5], ARGV[3], tonumber(ARGV[4]), max)
if not fence then
  return {'waiting-for-slot', subscribed}
end
return {'run', subscribed, fence}
