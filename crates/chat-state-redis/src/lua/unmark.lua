-- unmark.lua: removes a dedupe mark (sync dispatch, after a handler failed
-- before the acknowledgement), so the platform's retry runs.
--
-- KEYS[1] the dedupe mark                (named; a field of an hourly hash)
-- ARGV[1] how far back marks are kept (ms): the longest dedupe TTL
--
-- Reply: 1 when a live mark was removed, else 0.

local now = clock()
local by, _, key, field = find_mark(KEYS[1], tonumber(ARGV[1]), now)
if not by then
  return 0
end
redis.call('HDEL', key, field)
return 1
