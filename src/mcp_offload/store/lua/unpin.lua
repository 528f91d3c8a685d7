-- ARGV: P, s, h
local pin = ARGV[1] .. ':p:' .. ARGV[2] .. ':' .. ARGV[3]
if redis.call('DECR', pin) <= 0 then redis.call('DEL', pin) end
return 1
