-- ARGV: P, now_ms, tomb_ms, limit  ->  {removed, examined}
-- (run with prelude.lua in front: P, NOW, k(), pinned(), remove(), tombstone())
local now, tomb, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ms = redis.call('ZRANGEBYSCORE', P .. ':g:exp', '-inf', now, 'LIMIT', 0, limit)
local n = 0
for _, m in ipairs(ms) do
  local s, h = string.sub(m, 1, 32), string.sub(m, 34)
  if not pinned(s, h) then n = n + remove(s, h, 'expired', tomb) end
end
return {n, #ms}
