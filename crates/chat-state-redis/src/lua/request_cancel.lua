-- request_cancel.lua: a control event (a stop request) bypasses the strategy:
-- it is deduplicated and recorded on whoever holds the scope.
--
-- KEYS[1] dedupe mark of the control event (named; a field of an hourly hash)
-- KEYS[2] the scope's lease                (hash, PX lease TTL)
-- KEYS[3] the scope's slots                (sorted set token -> expiry ms)
-- KEYS[4] the scope's slot stop counts     (hash token -> count)
-- KEYS[5] the scope's slot waiters         (sorted set token -> expiry ms)
-- ARGV[1] dedupe TTL (ms)
-- ARGV[2] the request id
--
-- Atomic: dedupe check and mark, and counting a stop request on the lease (or
-- on every live slot). A repeat of the same request answers 'recorded' again.
-- Reply: {'duplicate'} | {'recorded', count} | {'no-holder'}

local function count()
  local c = redis.call('HGET', KEYS[2], 'c')
  if c then
    return tonumber(c)
  end
  local top = 0
  for _, v in ipairs(redis.call('HVALS', KEYS[4])) do
    top = math.max(top, tonumber(v))
  end
  return top
end

local by, recorded = find_mark(KEYS[1], tonumber(ARGV[1]), clock())
if by then
  if by == request_digest(ARGV[2]) and recorded == 'cancel' then
    return {'recorded', count()}
  end
  return {'duplicate'}
end
mark(KEYS[1], ARGV[1], ARGV[2], 'cancel')
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {'recorded', redis.call('HINCRBY', KEYS[2], 'c', 1)}
end
local now = clock()
purge_slots(KEYS[3], KEYS[4], KEYS[5], now)
local live = redis.call('ZRANGE', KEYS[3], 0, -1)
if #live == 0 then
  return {'no-holder'}
end
local top = 0
for _, token in ipairs(live) do
  top = math.max(top, redis.call('HINCRBY', KEYS[4], token, 1))
end
return {'recorded', top}
