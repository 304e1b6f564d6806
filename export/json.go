package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/recallkit/recall"
)

// JSON writes the session's current view (the items the model gets) in
// the shape of the OpenAI Conversations API's item list, the one
// conversations.ConversationItemList of openai-go decodes:
//
//	{"object":"list","data":[…],"first_id":"…","last_id":"…","has_more":false}
//
// Each item is written verbatim. An item without an "id" field gets one,
// inserted as its first field (the rest of its bytes untouched): ItemID of
// its place in the log, so the IDs are stable across exports. An item
// that has an "id" keeps it, whatever its type.
func JSON(w io.Writer, s *Session) error {
	return render(context.Background(), w, FormatJSON, memSource(s))
}

// writeJSON writes the final view of r. A first pass finds where the view
// was last reset and which items were removed, and checks the items it
// will write, so an invalid one is an error before anything is written.
func writeJSON(ctx context.Context, o output, r *record) error {
	mk, err := scan(ctx, r, true)
	if err != nil {
		return err
	}
	if err := mk.checkJSON(r.meta.Key); err != nil {
		return err
	}
	list := newItemList(o)
	err = r.each(ctx, func(e recall.Entry) error {
		switch {
		case e.Seq < mk.lastReset:
		case e.Seq == mk.lastReset && e.Kind == recall.KindCompaction:
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) == nil {
				for j, it := range c.Items {
					if ref := (recall.ItemRef{Seq: e.Seq, Index: j}); mk.inFinalView(ref) {
						list.add(recall.LiveItem{Ref: ref, Item: it})
					}
				}
			}
		case e.Kind == recall.KindItem:
			ref := recall.ItemRef{Seq: e.Seq}
			if it, ok := e.Item(); ok && mk.inFinalView(ref) {
				list.add(recall.LiveItem{Ref: ref, Item: it})
			}
		}
		return o.err()
	})
	if err != nil {
		return err
	}
	list.end()
	return nil
}

// itemList writes the item list of the Conversations API an item at a
// time.
type itemList struct {
	w           listWriter
	first, last string
	n           int
}

type listWriter interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
}

// newItemList starts the list on w.
func newItemList(w listWriter) *itemList {
	w.WriteString(`{"object":"list","data":[`)
	return &itemList{w: w}
}

// add writes l, with an "id" (see withID).
func (l *itemList) add(li recall.LiveItem) {
	id, item := withID(li)
	if l.n == 0 {
		l.first = id
	} else {
		l.w.WriteByte(',')
	}
	l.last = id
	l.n++
	l.w.WriteString("\n")
	l.w.Write(item)
}

// end ends the list.
func (l *itemList) end() {
	if l.n > 0 {
		l.w.WriteString("\n")
	}
	fmt.Fprintf(l.w, `],"first_id":%s,"last_id":%s,"has_more":false}`+"\n", quote(l.first), quote(l.last))
}

// ItemID is the ID JSON gives an item of the view that has none of its
// own: "recall-<seq>" for an item entry, "recall-<seq>.<index>" for the
// index-th item of a compaction. It is the ID recall serve's
// Conversations API shows for the same item, so an export and the
// service name items alike.
func ItemID(ref recall.ItemRef) string {
	id := "recall-" + strconv.FormatInt(ref.Seq, 10)
	if ref.Index > 0 {
		id += "." + strconv.Itoa(ref.Index)
	}
	return id
}

// withID returns the item's ID and its bytes with an "id" field: the item
// itself when it has one (a string), else the item with ItemID inserted
// first.
func withID(l recall.LiveItem) (string, []byte) {
	var head struct {
		ID json.RawMessage `json:"id"` // nil when absent, "null" when null
	}
	if json.Unmarshal(l.Item, &head) == nil && head.ID != nil {
		var id string
		if json.Unmarshal(head.ID, &id) != nil {
			var n json.Number
			if json.Unmarshal(head.ID, &n) == nil {
				id = n.String() // as openai-go reads a numeric id
			}
		}
		return id, l.Item
	}
	id := ItemID(l.Ref)
	i := bytes.IndexByte(l.Item, '{') // an item is an object: there is one
	rest := l.Item[i+1:]
	out := make([]byte, 0, len(l.Item)+len(id)+8)
	out = append(out, l.Item[:i+1]...)
	out = append(out, `"id":`...)
	out = append(out, quote(id)...)
	if t := bytes.TrimLeft(rest, " \t\r\n"); len(t) > 0 && t[0] != '}' {
		out = append(out, ',')
	}
	out = append(out, rest...)
	return id, out
}

func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
