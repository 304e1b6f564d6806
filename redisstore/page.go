package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

//go:embed lua/page.lua
var luaPage string

var pageScript = redis.NewScript(luaCommon + luaPage)

// maxChunk is the most log elements one later read of a page fetches.
const maxChunk = 4096

// ReadItems implements storekit.ItemPager. A page costs one script call in
// most cases, and its cost follows the page and the view's pops and
// removals, not the session's length: the append script keeps a record of
// the seqs of the view's control entries (the clear or compaction it
// starts at, and the pops and removals since; see lua/append.lua), and the
// items are read by position, element i of the log holding seq first+i.
//
// The page is one snapshot of the log at the LastSeq it reports. The
// script reads the last seq, the controls and the first chunk of the log
// at once (lua/page.lua); a page that needs more of the log reads it in
// chunks, each in a transaction with the session's generation, as Items
// does (see tail): elements up to that last seq never change while the
// generation holds, and a session removed and created again meanwhile
// makes the page start over. Elements that are not readable entries are
// skipped, as Items skips them.
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.ItemPage{}, fmt.Errorf("redisstore: read items %s: %w", key, err)
	}
	for range maxAttempts {
		page, err := s.readPage(ctx, key, opts)
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil {
			return recall.ItemPage{}, fmt.Errorf("redisstore: read items %s: %w", key, err)
		}
		return page, nil
	}
	return recall.ItemPage{}, fmt.Errorf("redisstore: read items %s: %w: the session was re-created during every read", key, recall.ErrConflict)
}

// pageRead is one attempt at a page: the snapshot the script read, and
// the reads of the log it leads to.
type pageRead struct {
	s     *Store
	ctx   context.Context
	key   recall.Key
	gen   string
	first int64 // the seq of the log's first element
	last  int64 // the snapshot's last seq: no read goes past it

	controls []recall.Entry // newest first
	// base is the seq of the clear or compaction the view starts at (0
	// for none), found as storekit.ReadPage finds it: a newest-first page
	// reads nothing at or below it.
	base int64
	// pre is the chunk of the log the script read, from seq preFrom on,
	// until a read uses it.
	pre     []string
	preFrom int64
	chunk   int64 // the size of the next read of the log
}

func (s *Store) readPage(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	dir := "b"
	if opts.Oldest {
		dir = "f"
	}
	keys := []string{s.k.meta(key), s.k.log(key), s.k.ctl(key)}
	res, err := pageScript.Run(ctx, s.rdb, keys, s.k.prefix, dir, opts.After.Seq, opts.Limit).Slice()
	if err != nil {
		return recall.ItemPage{}, err
	}
	if len(res) == 0 {
		return recall.ItemPage{}, nil // no such session
	}
	r, err := s.parsePage(ctx, key, res)
	if err != nil {
		return recall.ItemPage{}, err
	}
	items, more, err := storekit.ReadPage(storekit.PageReader{
		Controls: func(yield func(recall.Entry, error) bool) {
			for _, e := range r.controls {
				if !yield(e, nil) {
					return
				}
			}
		},
		Backward: r.backward,
		Forward:  r.forward,
	}, opts)
	if err != nil {
		return recall.ItemPage{}, err
	}
	return recall.ItemPage{Items: items, More: more, LastSeq: r.last}, nil
}

// parsePage reads the page script's reply (see lua/page.lua).
func (s *Store) parsePage(ctx context.Context, key recall.Key, res []any) (*pageRead, error) {
	bad := fmt.Errorf("%w: unexpected page script reply of %d values", recall.ErrCorrupt, len(res))
	if len(res) < 3 {
		return nil, bad
	}
	r := &pageRead{s: s, ctx: ctx, key: key}
	r.gen, _ = res[0].(string)
	lastStr, _ := res[1].(string)
	last, err := strconv.ParseInt(lastStr, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: last seq %q", recall.ErrCorrupt, lastStr)
	}
	firstStr, _ := res[2].(string)
	if r.first, err = firstSeq(firstStr); err != nil {
		return nil, err
	}
	r.last = last
	if len(res) < 5 {
		return nil, bad
	}
	n, _ := res[3].(int64)
	rest := res[4:]
	if n < 0 || int64(len(rest)) < 2*n+1 {
		return nil, bad
	}
	for i := range n {
		seq, _ := rest[2*i].(int64)
		el, _ := rest[2*i+1].(string)
		if e, err := decodeElement(el, seq); err == nil {
			r.controls = append(r.controls, e)
			if r.base == 0 && startsView(e) {
				r.base = e.Seq
			}
		}
	}
	rest = rest[2*n:]
	r.preFrom, _ = rest[0].(int64)
	for _, v := range rest[1:] {
		el, _ := v.(string)
		r.pre = append(r.pre, el)
	}
	r.chunk = int64(max(len(r.pre), 64))
	return r, nil
}

// startsView reports whether the view starts at e, as for
// storekit.ReadPage: a clear, or a compaction whose payload decodes.
func startsView(e recall.Entry) bool {
	var c recall.Compaction
	return e.Kind == recall.KindClear || e.Kind == recall.KindCompaction && json.Unmarshal(e.Data, &c) == nil
}

// backward yields the entries of the snapshot with Seq <= atMost, from the
// highest down.
func (r *pageRead) backward(atMost int64) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		hi := min(atMost, r.last)
		for hi >= r.first && hi > r.base {
			els, lo, err := r.read(max(hi-r.chunk+1, r.first, r.base+1), hi, true)
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			for i := len(els) - 1; i >= 0; i-- {
				e, err := decodeElement(els[i], lo+int64(i))
				if err != nil {
					continue // not a readable entry: skipped, as Load skips it
				}
				if !yield(e, nil) {
					return
				}
			}
			hi = lo - 1
		}
	}
}

// forward yields the entries of the snapshot with Seq >= atLeast, in Seq
// order.
func (r *pageRead) forward(atLeast int64) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		lo := max(atLeast, r.first)
		for lo <= r.last {
			els, lo2, err := r.read(lo, min(lo+r.chunk-1, r.last), false)
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			if len(els) == 0 {
				return // the list is shorter than the hash says (Load reports it)
			}
			for i, el := range els {
				e, err := decodeElement(el, lo2+int64(i))
				if err != nil {
					continue
				}
				if !yield(e, nil) {
					return
				}
			}
			lo = lo2 + int64(len(els))
		}
	}
}

// read returns the elements of seqs lo to hi and the seq of the first. The
// script's chunk serves instead the first read that ends where it does
// (backward) or starts where it does (forward), whatever its size; every
// other read is checked against the generation, so that it reads the
// snapshot's log.
func (r *pageRead) read(lo, hi int64, backward bool) ([]string, int64, error) {
	if pre, from := r.pre, r.preFrom; len(pre) > 0 && (backward && from+int64(len(pre))-1 == hi || !backward && from == lo) {
		r.pre = nil
		return pre, from, nil
	}
	var gc *redis.StringCmd
	var lc *redis.StringSliceCmd
	_, err := r.s.rdb.TxPipelined(r.ctx, func(p redis.Pipeliner) error {
		gc = p.HGet(r.ctx, r.s.k.meta(r.key), "gen")
		lc = p.LRange(r.ctx, r.s.k.log(r.key), lo-r.first, hi-r.first)
		return nil
	})
	if err == nil && gc.Val() != r.gen || errors.Is(err, redis.Nil) {
		return nil, 0, errStale // removed, or removed and created again
	}
	if err != nil {
		return nil, 0, err
	}
	r.chunk = min(r.chunk*2, maxChunk)
	return lc.Val(), lo, nil
}
