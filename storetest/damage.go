package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// DamagedItems returns the stored items the damaged-data cases plant with
// Config.Plant: records that are not a JSON object, as a damaged disk, a
// buggy writer or another program could leave them. No store accepts them
// through Append; every store must skip them on read. The last ones start
// with '{' and end with '}' but are not JSON ("{x}"): recall.Entry.Item, which
// looks at those bytes only, takes them for objects, so a store whose
// records can hold any bytes must check them in full when it reads them.
// Each call returns a new slice.
func DamagedItems() [][]byte {
	return [][]byte{
		[]byte(`not json`),
		[]byte(`[1,2]`),
		[]byte(`"str"`),
		[]byte(`42`),
		[]byte(`{"unterminated"`),
		[]byte(`{x}`),
		[]byte(`{"a":}`),
		[]byte(`{"a":1,}`),
		[]byte(`{"a":1}}`),
		[]byte(` {"a":1} {"b":2} `),
	}
}

// malformedObject reports whether data is one of the damaged records
// recall.Entry.Item takes for an object: not JSON, yet starting with '{' and
// ending with '}'.
func malformedObject(data []byte) bool {
	_, looks := recall.Entry.Item(recall.Entry{Kind: recall.KindItem, Data: data})
	return looks && !json.Valid(data)
}

// damagedSession is the session testDamaged plants its records in, and
// what the store must make of it.
type damagedSession struct {
	key      recall.Key
	valid    []recall.Item     // the valid items, oldest first
	wantLive []recall.LiveItem // the view: the valid items with their refs
	last     int64             // LastSeq once planted
	logged   int               // the entries Load returns
	corrupt  int               // the planted records, Meta.Corrupt
}

// testDamaged plants records that are not JSON objects (DamagedItems)
// among valid items, with Config.Plant, and checks that the store treats
// them as recall.Replay does: Items and GetItems leave them out, with the
// other items' refs intact, and a limit counts valid items only; Pop
// skips them (a planted newest record too); Load's Meta.Corrupt counts
// them and ItemCount does not; a fork holds the valid items only;
// storekit.Verify reports the session as ErrCorrupt, naming it. Load keeps
// a planted record in the log, except that a store may read one that
// recall.Entry.Item takes for an object as an unreadable record (see
// plantAt). The damaged sessions are removed before the test ends, so the
// store passes the Verify every subtest ends with.
func testDamaged(e *env) {
	t := e.t
	if e.plant == nil {
		t.Log("storetest: Config.Plant is nil: the damaged-data cases are skipped")
		return
	}
	key := recall.Key{Project: "p", Session: "damaged"}
	healthy := recall.Key{Project: "p", Session: "healthy"}
	e.mustAdd(healthy, msg("healthy"))
	d := plantDamaged(e, key)

	log := checkDamagedRead(e, d)
	checkDamagedRemoveItem(e, key, log)
	fork := checkDamagedFork(e, d)
	checkDamagedPop(e, d)
	only := checkOnlyDamaged(e)
	checkVerifyNamesDamaged(e, []recall.Key{key, only}, []recall.Key{healthy, fork})
	for _, k := range []recall.Key{key, only} {
		if err := e.s.Remove(e.ctx, k); err != nil {
			t.Errorf("Remove of the damaged %s: %v", k, err)
		}
	}
}

// plantDamaged fills key with valid items and, between them, the records
// of DamagedItems, planted with Config.Plant: v0 d0 v1 d1 ... v9 d9 v10,
// then d-last, a planted newest record. It returns what the store must
// make of the session.
func plantDamaged(e *env, key recall.Key) damagedSession {
	bad := DamagedItems()
	d := damagedSession{key: key, valid: msgs("v", len(bad)+1)}
	d.logged = len(d.valid) + 1
	for i, v := range d.valid {
		seq := e.mustAdd(key, v)
		d.wantLive = append(d.wantLive, recall.LiveItem{Ref: recall.ItemRef{Seq: seq}, Item: v})
		if i < len(bad) && e.plantAt(key, bad[i], seq+1) > 0 {
			d.logged++
		}
	}
	d.last = e.plantAt(key, []byte(`[{"type":"message"}]`), 0)
	d.corrupt = len(bad) + 1
	return d
}

// checkDamagedRead checks every read of the damaged session: its view,
// Load's metadata (Corrupt counting the planted records, ItemCount not)
// and log, Stat, List, and that storekit.VerifySession reports it. It
// returns the log Load returned.
func checkDamagedRead(e *env, d damagedSession) []recall.Entry {
	t := e.t
	key, valid, corrupt := d.key, d.valid, d.corrupt
	e.wantDamagedView(key, d.wantLive, d.last)
	m, log := e.mustLoad(key)
	if m.Corrupt != corrupt || m.ItemCount != len(valid) || m.LastSeq != d.last {
		t.Errorf("Load's metadata: Corrupt %d, ItemCount %d, LastSeq %d; want %d, %d, %d", m.Corrupt, m.ItemCount, m.LastSeq, corrupt, len(valid), d.last)
	}
	if len(log) != d.logged {
		t.Errorf("Load: %d entries, want %d: a planted record is kept in the log", len(log), d.logged)
	}
	if sm := e.mustStat(key); sm.ItemCount != len(valid) || sm.Corrupt != 0 && sm.Corrupt != corrupt {
		t.Errorf("Stat: ItemCount %d, Corrupt %d; want %d valid items, and Corrupt %d (or 0 where the store cannot count)", sm.ItemCount, sm.Corrupt, len(valid), corrupt)
	}
	for _, l := range listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1}) {
		if l.Key == key && l.ItemCount != len(valid) {
			t.Errorf("List: %s has ItemCount %d, want %d", key, l.ItemCount, len(valid))
		}
	}
	e.wantCorrupt(key)
	return log
}

// checkDamagedRemoveItem checks that a ref to the first planted record in
// log, key's log, is not in the view: RemoveItem of it is ErrNotFound
// and writes nothing.
func checkDamagedRemoveItem(e *env, key recall.Key, log []recall.Entry) {
	for _, ent := range log {
		if _, ok := ent.Item(); ent.Kind == recall.KindItem && !ok {
			before := e.mustStat(key)
			_, err := recall.NewSession(e.s, key).RemoveItem(e.ctx, recall.ItemRef{Seq: ent.Seq})
			wantErr(e.t, fmt.Sprintf("RemoveItem of the planted record at %d", ent.Seq), err, recall.ErrNotFound)
			if m := e.mustStat(key); m.LastSeq != before.LastSeq {
				e.t.Errorf("a refused RemoveItem of a planted record wrote: LastSeq %d, was %d", m.LastSeq, before.LastSeq)
			}
			break
		}
	}
}

// checkDamagedFork forks the damaged session into p/fork and checks that
// the fork holds the valid items only, and is healthy. It returns the
// fork's key.
func checkDamagedFork(e *env, d damagedSession) recall.Key {
	t := e.t
	fork := recall.Key{Project: "p", Session: "fork"}
	if fm, err := recall.NewSession(e.s, d.key).Fork(e.ctx, 0, fork); err != nil || fm.Corrupt != 0 {
		t.Errorf("Fork of a damaged session = Corrupt %d, %v; want a healthy fork", fm.Corrupt, err)
	} else {
		e.wantView(fork, recall.PlainItems(d.wantLive))
		if err := storekit.VerifySession(e.ctx, e.s, fork); err != nil {
			t.Errorf("VerifySession of the fork: %v", err)
		}
	}
	return fork
}

// checkDamagedPop checks that Pop skips the planted newest record and
// takes the newest valid item, then goes on through the planted records
// between valid ones; that a Pop with only planted records left returns
// nil and writes nothing; and that new items come after them as usual.
func checkDamagedPop(e *env, d damagedSession) {
	t := e.t
	key, valid, wantLive := d.key, d.valid, d.wantLive
	for i := len(valid) - 1; i >= 0; i-- {
		got, err := e.s.Pop(e.ctx, key)
		if err != nil || !bytes.Equal(got, valid[i]) {
			t.Errorf("Pop = %s, %v; want %s", clip(got), err, clip(valid[i]))
			break
		}
		wantLive = wantLive[:i]
		e.wantDamagedView(key, wantLive, e.mustStat(key).LastSeq)
	}
	before := e.mustStat(key)
	if got, err := e.s.Pop(e.ctx, key); got != nil || err != nil {
		t.Errorf("Pop of a session holding only planted records = %s, %v; want nil, nil", clip(got), err)
	}
	if m := e.mustStat(key); m.LastSeq != before.LastSeq {
		t.Errorf("a Pop with nothing to pop wrote: LastSeq %d, was %d", m.LastSeq, before.LastSeq)
	}
	if m, _ := e.mustLoad(key); m.Corrupt != d.corrupt || m.ItemCount != 0 {
		t.Errorf("after the pops: Corrupt %d, ItemCount %d; want %d, 0", m.Corrupt, m.ItemCount, d.corrupt)
	}
	// and new items come after them as usual
	seq := e.mustAdd(key, msg("after"))
	e.wantDamagedView(key, []recall.LiveItem{{Ref: recall.ItemRef{Seq: seq}, Item: msg("after")}}, seq)
}

// checkOnlyDamaged checks a session, p/only-damage, whose only items are
// planted records: its view is empty, Pop returns nil, Load counts the
// records in Corrupt, and storekit.VerifySession reports it. It returns
// the session's key.
func checkOnlyDamaged(e *env) recall.Key {
	t := e.t
	only := recall.Key{Project: "p", Session: "only-damage"}
	if _, err := recall.NewSession(e.s, only).Create(e.ctx, recall.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.plantAt(only, []byte(`[1,2]`), 2)
	e.plantAt(only, []byte(`{x}`), 3)
	onlyLast := e.mustStat(only).LastSeq // 3, or 2 where {x} took no seq
	e.wantDamagedView(only, nil, onlyLast)
	if got, err := e.s.Pop(e.ctx, only); got != nil || err != nil {
		t.Errorf("Pop of a session whose only items are planted = %s, %v; want nil, nil", clip(got), err)
	}
	if m, _ := e.mustLoad(only); m.Corrupt != 2 || m.ItemCount != 0 || m.LastSeq != onlyLast {
		t.Errorf("Load: Corrupt %d, ItemCount %d, LastSeq %d; want 2, 0, %d", m.Corrupt, m.ItemCount, m.LastSeq, onlyLast)
	}
	e.wantCorrupt(only)
	return only
}

// checkVerifyNamesDamaged checks that storekit.Verify of the store is
// ErrCorrupt naming every damaged session, and none of the healthy ones.
func checkVerifyNamesDamaged(e *env, damaged, healthy []recall.Key) {
	t := e.t
	err := storekit.Verify(e.ctx, e.s)
	if !errors.Is(err, recall.ErrCorrupt) {
		t.Errorf("storekit.Verify of a store with damaged sessions = %v, want ErrCorrupt", err)
		return
	}
	for _, k := range damaged {
		if !strings.Contains(err.Error(), k.String()) {
			t.Errorf("storekit.Verify does not name %s: %v", k, err)
		}
	}
	for _, k := range healthy {
		if strings.Contains(err.Error(), k.String()+":") {
			t.Errorf("storekit.Verify names the healthy %s: %v", k, err)
		}
	}
}

// plantAt plants data as the next entry of key with Config.Plant and
// returns its seq, which must be want when want > 0; or 0 when the store
// read it as an unreadable record.
//
// A store keeps a planted record in the log Load returns, verbatim, at the
// seq after the session's last. A record that recall.Entry.Item takes for an
// object but that is not JSON (malformedObject) it may instead read as
// unreadable, as the file store reads a line that does not decode: left
// out of the log, counted in Meta.Corrupt, its seq used or not.
func (e *env) plantAt(key recall.Key, data []byte, want int64) int64 {
	e.t.Helper()
	before, _ := e.mustLoad(key)
	e.plant(e.t, e.s, key, data)
	m, log := e.mustLoad(key)
	n := len(log)
	if n > 0 && log[n-1].Seq == before.LastSeq+1 && log[n-1].Kind == recall.KindItem && bytes.Equal(log[n-1].Data, data) {
		if want > 0 && log[n-1].Seq != want {
			e.t.Fatalf("Config.Plant of %q at seq %d, want %d", data, log[n-1].Seq, want)
		}
		return log[n-1].Seq
	}
	unreadable := m.Corrupt == before.Corrupt+1 && (m.LastSeq == before.LastSeq || m.LastSeq == before.LastSeq+1) &&
		(n == 0 || log[n-1].Seq <= before.LastSeq)
	if !malformedObject(data) || !unreadable {
		e.t.Fatalf("Config.Plant of %q: the log does not end with it at seq %d (%s), nor is it an unreadable record (Corrupt %d, was %d; LastSeq %d, was %d)",
			data, before.LastSeq+1, kinds(log), m.Corrupt, before.Corrupt, m.LastSeq, before.LastSeq)
	}
	return 0
}

// wantDamagedView checks every read of key's view against want, refs
// included: Items (which must return LastSeq last) and GetItems, for
// several limits, each counting valid items only.
func (e *env) wantDamagedView(key recall.Key, want []recall.LiveItem, last int64) {
	e.t.Helper()
	t := e.t
	sess := recall.NewSession(e.s, key)
	for _, limit := range []int{0, 1, 2, 3, len(want), len(want) + 3} {
		w := want
		if limit > 0 && limit < len(w) {
			w = w[len(w)-limit:]
		}
		live, got, err := e.s.Items(e.ctx, key, limit)
		if err != nil {
			t.Errorf("Items(%s, %d) of a damaged session: %v", key, limit, err)
			continue
		}
		if got != last {
			t.Errorf("Items(%s, %d) of a damaged session returned LastSeq %d, want %d", key, limit, got, last)
		}
		if d := liveDiff(live, w); d != "" {
			t.Errorf("Items(%s, %d) of a damaged session: %s", key, limit, d)
		}
		items, err := sess.GetItems(e.ctx, limit)
		if err != nil {
			t.Errorf("GetItems(%s, %d) of a damaged session: %v", key, limit, err)
			continue
		}
		wantItems(t, fmt.Sprintf("GetItems(%s, %d) of a damaged session", key, limit), items, recall.PlainItems(w))
	}
}

// wantCorrupt checks that storekit.VerifySession reports key as ErrCorrupt,
// naming it.
func (e *env) wantCorrupt(key recall.Key) {
	e.t.Helper()
	err := storekit.VerifySession(e.ctx, e.s, key)
	if !errors.Is(err, recall.ErrCorrupt) || !strings.Contains(err.Error(), key.String()) {
		e.t.Errorf("storekit.VerifySession of the damaged %s = %v; want ErrCorrupt naming the session", key, err)
	}
}
