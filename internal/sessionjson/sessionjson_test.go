package sessionjson

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// TestOf checks the run's JSON where it is embedded: every field, in
// order, between the fields around it, with [] and {} for nil labels and
// metadata, and the source last.
func TestOf(t *testing.T) {
	type shape struct {
		Before string `json:"before"`
		Fields
		After int `json:"after"`
	}
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		m    recall.Meta
		want string
	}{
		{recall.Meta{}, `{"before":"b","created":"0001-01-01T00:00:00Z","updated":"0001-01-01T00:00:00Z","item_count":0,"last_seq":0,"archived":false,"pinned":false,"trashed":null,"labels":[],"metadata":{},"source":"recall","after":1}`},
		{recall.Meta{Created: now, Updated: now.Add(time.Second), ItemCount: 2, LastSeq: 5, Archived: true, Pinned: true, Trashed: now.Add(time.Hour), Labels: []string{"x"}, Metadata: map[string]string{"k": "v", "import.source": "codex"}, Title: "left out"},
			`{"before":"b","created":"2025-06-01T10:00:00Z","updated":"2025-06-01T10:00:01Z","item_count":2,"last_seq":5,"archived":true,"pinned":true,"trashed":"2025-06-01T11:00:00Z","labels":["x"],"metadata":{"import.source":"codex","k":"v"},"source":"codex","after":1}`},
	} {
		b, err := json.Marshal(shape{Before: "b", Fields: Of(c.m), After: 1})
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("got  %s\nwant %s", b, c.want)
		}
	}
}
