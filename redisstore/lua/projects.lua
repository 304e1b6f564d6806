-- projects returns, for every project holding a main session, its name,
-- its session count and its newest session's update time (µs).
--
-- ARGV[1] prefix. Callers prune the expiry index first (prune.lua), so
-- the counts leave out expired sessions.
local out = {}
for _, p in ipairs(redis.call('ZRANGE', PROJECTS, 0, -1)) do
  local idx = allidx(p)
  local updated
  while true do
    local ms = redis.call('ZRANGE', idx, 0, 0)
    if #ms == 0 then break end
    local pp, s = parse(ms[1])
    updated = pp and redis.call('HGET', metakey(pp, s), 'updated')
    if updated then break end
    unindex(ms[1])
  end
  if updated then
    out[#out + 1] = p
    out[#out + 1] = redis.call('ZCARD', idx)
    out[#out + 1] = updated
  else
    redis.call('ZREM', PROJECTS, p)
  end
end
return out
