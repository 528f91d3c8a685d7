-- ARGV: P, now_ms, s, h, staging, size, ttl_ms, tomb_ms, key_ttl_ms, meta, index,
--       scope_max_b, scope_max_n, max_b, max_n, victim members...
-- (run with prelude.lua in front: P, NOW, k(), pinned(), remove(), tombstone())
local s, h, staging = ARGV[3], ARGV[4], ARGV[5]
local size, now, ttl, tomb, key_ttl = tonumber(ARGV[6]), NOW, tonumber(ARGV[7]),
  tonumber(ARGV[8]), tonumber(ARGV[9])
local smax_b, smax_n, gmax_b, gmax_n = tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]),
  tonumber(ARGV[15])
local m = s .. ':' .. h
if redis.call('EXISTS', k('m', s, h)) == 1 then return 'exists' end
if redis.call('EXISTS', staging) == 0 or redis.call('STRLEN', staging) ~= size then return 'lost' end
local stot, gtot = P .. ':s:' .. s .. ':tot', P .. ':g:tot'
local st = redis.call('HMGET', stot, 'b', 'n')
local gt = redis.call('HMGET', gtot, 'b', 'n')
local sb, sn = tonumber(st[1] or 0), tonumber(st[2] or 0)
local gb, gn = tonumber(gt[1] or 0), tonumber(gt[2] or 0)
for i = 16, #ARGV do
  local vm = ARGV[i]
  local vs, vh = string.sub(vm, 1, 32), string.sub(vm, 34)
  if pinned(vs, vh) then return 'pinned' end
  local vsize = redis.call('HGET', P .. ':g:size', vm)
  if vsize then
    gb, gn = gb - tonumber(vsize), gn - 1
    if vs == s then sb, sn = sb - tonumber(vsize), sn - 1 end
  end
end
if sb + size > smax_b or sn + 1 > smax_n or gb + size > gmax_b or gn + 1 > gmax_n then return 'over' end
for i = 16, #ARGV do
  local vm = ARGV[i]
  remove(string.sub(vm, 1, 32), string.sub(vm, 34), 'evicted', tomb)
end
redis.call('RENAME', staging, k('d', s, h))
redis.call('PEXPIRE', k('d', s, h), key_ttl)
redis.call('HSET', k('m', s, h), 'meta', ARGV[10], 'index', ARGV[11], 'size', size)
redis.call('PEXPIRE', k('m', s, h), key_ttl)
redis.call('DEL', k('t', s, h))
redis.call('ZADD', P .. ':g:lru', now, m)
redis.call('ZADD', P .. ':g:exp', now + ttl, m)
redis.call('HSET', P .. ':g:size', m, size)
redis.call('ZADD', P .. ':s:' .. s .. ':lru', now, h)
redis.call('HINCRBY', gtot, 'b', size)
redis.call('HINCRBY', gtot, 'n', 1)
redis.call('HINCRBY', stot, 'b', size)
redis.call('HINCRBY', stot, 'n', 1)
return 'ok'
