package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
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
	live := s.Items()
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"object":"list","data":[`)
	var first, last string
	for i, l := range live {
		if !jsonvalid.Valid(l.Item) {
			return fmt.Errorf("export: json %s: item %d.%d: %w: not valid JSON", s.Meta.Key, l.Ref.Seq, l.Ref.Index, recall.ErrCorrupt)
		}
		id, item := withID(l)
		if i == 0 {
			first = id
		} else {
			bw.WriteByte(',')
		}
		last = id
		bw.WriteString("\n")
		bw.Write(item)
	}
	if len(live) > 0 {
		bw.WriteString("\n")
	}
	fmt.Fprintf(bw, `],"first_id":%s,"last_id":%s,"has_more":false}`+"\n", quote(first), quote(last))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: json: %w", err)
	}
	return nil
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
