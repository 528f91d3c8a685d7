-- KEYS: the output's group (6), the ledger (4). ARGV: now_ms, s, h, tomb_ms, mode ('delete' | 'evict')
--  -> {'ok'} | {'gone', reason} | {'unknown'} | {'pinned'} (evict only: a reader holds it, nothing removed)
-- (run with prelude.lua in front)
local o, L = group(1), ledger(7)
local s, h, tomb, mode = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local m = s .. ':' .. h
if mode == 'evict' then
  if pinned(o) then return {'pinned'} end
  if remove(o, L, m, h, 'evicted', tomb) == 1 then return {'ok'} end
  return {'unknown'}
end
local existed = redis.call('EXISTS', o.m)
if remove(o, L, m, h, '', tomb) == 1 or existed == 1 then return {'ok'} end
local t = tombstone(o, tomb)
if t then return {'gone', t} end
return {'unknown'}
