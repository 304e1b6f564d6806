-- pinindex puts a session in the pinned indexes if it is pinned, with its
-- index score: the upgrade to schema 4 (migrate.go) runs it for every main
-- session written before those indexes were kept. It reads the hash and
-- writes in one step, so an append running beside it (which keeps the
-- indexes itself) cannot be undone by it.
--
-- KEYS[1] meta hash, [2] the pinned index of every project, [3] the
-- project's. ARGV[1] prefix, [2] the session's index member.
--
-- Returns 1 when the session is pinned (and now indexed), else 0.
local h = redis.call('HMGET', KEYS[1], 'pin', 'updated')
if h[1] ~= '1' or not h[2] then return 0 end
local score = scoreof(h[2])
redis.call('ZADD', KEYS[2], score, ARGV[2])
redis.call('ZADD', KEYS[3], score, ARGV[2])
return 1
