-- ARGV: P, now_ms, s, h, tomb_ms  -> {'ok'} | {'gone', reason} | {'unknown'}
-- (run with prelude.lua in front: P, NOW, k(), pinned(), remove(), tombstone())
local s, h, tomb = ARGV[3], ARGV[4], tonumber(ARGV[5])
local existed = redis.call('EXISTS', k('m', s, h))
if remove(s, h, '', tomb) == 1 or existed == 1 then return {'ok'} end
local t = tombstone(s, h, tomb)
if t then return {'gone', t} end
return {'unknown'}
