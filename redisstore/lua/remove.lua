-- remove deletes a session (with, for a main session, every subagent record
-- under it) or one subagent record, and its index entries, atomically.
--
-- KEYS[1] meta hash, KEYS[2] log list, KEYS[3] control record, KEYS[4]
-- (main sessions only) the index of its subagent records.
-- ARGV[1] prefix, [2] the session's index member, [3] guard: when set,
-- remove only if the session's update time (µs) is still this one
-- (Cleanup decided on that state), else return -1.
--
-- Returns the number of records removed.
local updated = redis.call('HGET', KEYS[1], 'updated')
if ARGV[3] ~= '' and updated ~= ARGV[3] then return -1 end
local n = 0
if updated then n = 1 end
unindex(ARGV[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
if KEYS[4] then
  for _, sm in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    local p, s, sub = parse(sm)
    if p and sub then
      n = n + redis.call('DEL', metakey(p, s, sub))
      redis.call('DEL', logkey(p, s, sub), ctlkey(p, s, sub))
    end
    redis.call('ZREM', EXPIRY, sm)
  end
  redis.call('DEL', KEYS[4])
end
return n
