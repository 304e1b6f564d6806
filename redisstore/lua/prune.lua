-- prune unindexes up to ARGV[2] sessions whose TTL has run out and returns
-- how many due members it looked at. ARGV[1] prefix.
return prune(tonumber(ARGV[2]))
