-- KEYS: the new output's group (6), the ledger (4), the staging key (11), then each victim's group (6 each).
-- ARGV: now_ms, s, h, size, ttl_ms, tomb_ms, key_ttl_ms, meta, index, scope_max_b, scope_max_n, max_b, max_n,
--       victim members ("s:h", in the order of their groups)...
--  -> 'ok' | 'exists' | 'lost' | 'pinned' | 'over'
-- (run with prelude.lua in front)
local o, L, staging = group(1), ledger(7), KEYS[11]
local s, h = ARGV[2], ARGV[3]
local size, now, ttl, tomb, key_ttl = tonumber(ARGV[4]), NOW, tonumber(ARGV[5]), tonumber(ARGV[6]),
  tonumber(ARGV[7])
local smax_b, smax_n, gmax_b, gmax_n = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]),
  tonumber(ARGV[13])
local FIRST_VICTIM = 14
local m = s .. ':' .. h
if redis.call('EXISTS', o.m) == 1 then return 'exists' end
if redis.call('EXISTS', staging) == 0 or redis.call('STRLEN', staging) ~= size then return 'lost' end
local st = redis.call('HMGET', o.tot, 'b', 'n')
local gt = redis.call('HMGET', L.tot, 'b', 'n')
local sb, sn = tonumber(st[1] or 0), tonumber(st[2] or 0)
local gb, gn = tonumber(gt[1] or 0), tonumber(gt[2] or 0)
local victims = {}
for i = FIRST_VICTIM, #ARGV do
  local vm = ARGV[i]
  local v = group(12 + 6 * (i - FIRST_VICTIM))
  if pinned(v) then return 'pinned' end
  local vsize = redis.call('HGET', L.size, vm)
  if vsize then
    gb, gn = gb - tonumber(vsize), gn - 1
    if string.sub(vm, 1, 32) == s then sb, sn = sb - tonumber(vsize), sn - 1 end
  end
  victims[#victims + 1] = {v, vm, string.sub(vm, 34)}
end
if sb + size > smax_b or sn + 1 > smax_n or gb + size > gmax_b or gn + 1 > gmax_n then return 'over' end
for _, victim in ipairs(victims) do
  remove(victim[1], L, victim[2], victim[3], 'evicted', tomb)
end
redis.call('RENAME', staging, o.d)
redis.call('PEXPIRE', o.d, key_ttl)
redis.call('HSET', o.m, 'meta', ARGV[8], 'index', ARGV[9], 'size', size)
redis.call('PEXPIRE', o.m, key_ttl)
redis.call('DEL', o.t)
redis.call('ZADD', L.lru, now, m)
redis.call('ZADD', L.exp, now + ttl, m)
redis.call('HSET', L.size, m, size)
redis.call('ZADD', o.lru, now, h)
redis.call('HINCRBY', L.tot, 'b', size)
redis.call('HINCRBY', L.tot, 'n', 1)
redis.call('HINCRBY', o.tot, 'b', size)
redis.call('HINCRBY', o.tot, 'n', 1)
return 'ok'
