-- upgrade sets a session's update time and first prompt (field fp) to
-- those migrate.go recomputed from its log under the current rules, and
-- moves the session in its indexes, if the session is still the one that
-- was read.
--
-- KEYS[1] meta hash, then the indexes that may hold the session (as
-- append.lua's KEYS[4] on). ARGV[1] prefix, [2] the last seq read, [3] the
-- generation read, [4] the update time (µs), [5] its index score, [6] the
-- session's index member, [7] the first prompt ('' for none).
--
-- Returns 1 when it changed the time, 0 when the time was right already,
-- -1 when the session changed since it was read (read it again).
local h = redis.call('HMGET', KEYS[1], 'last', 'gen', 'updated', 'fp')
if h[1] ~= ARGV[2] or (h[2] or '') ~= ARGV[3] then return -1 end
if ARGV[7] ~= '' and h[4] ~= ARGV[7] then redis.call('HSET', KEYS[1], 'fp', ARGV[7]) end
if h[3] == ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], 'updated', ARGV[4])
-- XX: an index the session is not in (archived: the active ones) stays so
for i = 2, #KEYS do redis.call('ZADD', KEYS[i], 'XX', ARGV[5], ARGV[6]) end
return 1
