-- kv_set_if_equals.lua: a KV compare-and-set (`SetMode::IfEquals`).
--
-- KEYS[1] the entry                       (string)
-- ARGV[1] the value it must hold now
-- ARGV[2] the value to write
-- ARGV[3] TTL (ms); 0: none
--
-- Atomic: the comparison and the write. An absent (or expired) entry never
-- matches.
-- Reply: 1 written, 0 not

if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
