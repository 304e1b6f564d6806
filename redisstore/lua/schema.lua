-- schema raises the schema version kept in KEYS[1] to ARGV[2], never
-- lowers it, and returns the version it found (0 when none). ARGV[1] prefix.
local v = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if v < tonumber(ARGV[2]) then redis.call('SET', KEYS[1], ARGV[2]) end
return v
