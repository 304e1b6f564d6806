package redisstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// TestConformance runs the shared suite, each store on its own prefix.
func TestConformance(t *testing.T) {
	t.Parallel()
	testURL(t) // skip loudly without Redis
	storetest.RunConfig(t, storetest.Config{
		New:   func(t *testing.T) recall.Store { return newStore(t, Options{}) },
		Plant: plant,
	})
}

// plantScript writes ARGV[1] as a raw log element at the session's last
// seq + 1 and moves the last seq on, as another program that keeps the
// seqs dense would, and nothing else. When ARGV[2] is "item" the element
// is an item entry whose item is ARGV[1], stamped with the session's
// update time (so that it moves no time); otherwise ARGV[1] is all that
// follows the seq (an element that need not be an entry at all).
var plantScript = redis.NewScript(`
local last = redis.call('HGET', KEYS[1], 'last')
if not last then return redis.error_reply('plant: no such session') end
local seq = string.format('%d', tonumber(last) + 1)
local header = ''
if ARGV[2] == 'item' then
  header = '{"k":"item","t":' .. redis.call('HGET', KEYS[1], 'updated') .. '}\n'
end
redis.call('RPUSH', KEYS[2], seq .. '\n' .. header .. ARGV[1])
redis.call('HSET', KEYS[1], 'last', seq)
return tonumber(seq)
`)

// plant is the store's storetest.Config.Plant: an item entry whose item is
// data, written without validation.
func plant(t *testing.T, s recall.Store, key recall.Key, data []byte) {
	t.Helper()
	plantElement(t, s.(*Store), key, string(data), "item")
}

// plantElement writes a raw element at the next seq of key: an item entry
// holding data when kind is "item", else data alone after the seq.
func plantElement(t testing.TB, s *Store, key recall.Key, data, kind string) int64 {
	t.Helper()
	seq, err := plantScript.Run(context.Background(), adminClient(t), []string{s.k.meta(key), s.k.log(key)}, data, kind).Int64()
	if err != nil {
		t.Fatalf("plant into %s: %v", key, err)
	}
	return seq
}
