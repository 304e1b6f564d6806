// Package importtest checks an importer against the guarantees of package
// importer, and measures an import's memory, for the importers' own tests
// and fuzz targets.
package importtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// Check imports a transcript, whose bytes are data, twice into a fresh
// memory store with imp (an importer's Import of the file holding data),
// and checks what every importer promises: nothing fails but a file that
// names no session; only a torn last line is left out of the bytes
// consumed; each record written records the offset and the digest of
// the bytes it consumed; the second import writes nothing; and the store
// passes storekit.Verify. An importer's fuzz target calls it.
func Check(t testing.TB, imp func(context.Context, recall.Store) (importer.Summary, error), data []byte) {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	sum, err := imp(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Failures) > 0 {
		if sum.Failures[0].Key != "" {
			t.Fatalf("a record failed: %+v", sum.Failures)
		}
		return // the file names no session, or no folder for its conversation
	}
	if rest := data[sum.Bytes:]; len(rest) > 0 && (sum.Skipped["torn"] != 1 || bytes.IndexByte(rest, '\n') >= 0) {
		t.Fatalf("consumed %d of %d bytes, skipped %v", sum.Bytes, len(data), sum.Skipped)
	}
	page, _ := st.List(ctx, "", recall.ListOptions{Limit: -1})
	for _, m := range page.Sessions {
		subs, _ := st.List(ctx, m.Key.Project, recall.ListOptions{Parent: m.Key.Session, Limit: -1})
		for _, r := range append(subs.Sessions, m) {
			n, err := strconv.Atoi(r.Metadata[importer.MetaOffset])
			if err != nil || n > len(data) {
				t.Fatalf("%s: offset %q of %d bytes", r.Key, r.Metadata[importer.MetaOffset], len(data))
			}
			if d := sha256.Sum256(data[:n]); hex.EncodeToString(d[:]) != r.Metadata[importer.MetaDigest] {
				t.Fatalf("%s: the digest is not that of the first %d bytes", r.Key, n)
			}
		}
	}
	again, err := imp(ctx, st)
	if err != nil || len(again.Failures) > 0 || again.Entries != 0 || again.Sessions.New+again.Sessions.Updated+again.Subagents.New+again.Subagents.Updated > 0 {
		t.Fatalf("second import: %+v, %v", again, err)
	}
	if err := storekit.Verify(ctx, st); err != nil {
		t.Fatal(err)
	}
}
