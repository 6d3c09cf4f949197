-- acquire_slot.lua: takes one of a scope's `max` concurrency slots for an event
-- that got WaitingForSlot.
--
-- KEYS[1] the scope's slots              (sorted set token -> expiry ms)
-- KEYS[2] the scope's slot cancel flags  (set of tokens)
-- KEYS[3] the bucket's fence counter     (string, no TTL)
-- ARGV[1] the new slot's token
-- ARGV[2] slot TTL (ms)
-- ARGV[3] max slots
--
-- Atomic: dropping expired slots, counting, and taking one.
-- Reply: the slot's fence, or false when every slot is taken

return take_slot(KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
