package importer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
)

// chatLog is the Mapper of a made-up tool's transcripts, plain text:
//
//	# session s-1 in /home/dev/app
//	2025-01-02T03:04:05Z user: Hello.
//	2025-01-02T03:04:06Z assistant: Hi!
//
// It decodes a line and adds what it gives; importer.Run does the rest.
type chatLog struct{ id importer.Identity }

func (c *chatLog) Line(t *importer.Transcript, l importer.Line) {
	if rest, ok := bytes.CutPrefix(l.Bytes, []byte("# session ")); ok {
		id, dir, _ := strings.Cut(string(rest), " in ")
		c.id = importer.Identity{SessionID: id, Cwd: dir}
		return
	}
	at, msg, _ := bytes.Cut(l.Bytes, []byte(" "))
	role, text, ok := bytes.Cut(msg, []byte(": "))
	if !ok {
		t.Torn(l) // "torn" when it is an unfinished last line, else "malformed"
		return
	}
	t.Target("").Add(importer.Record{Entry: recall.Entry{
		Kind: recall.KindItem,
		Time: importer.ParseTime(string(at)),
		Data: []byte(recall.Message(string(role), string(text))),
	}})
}

func (c *chatLog) Identity(eof bool) (importer.Identity, error) {
	if eof && c.id.SessionID == "" {
		return c.id, fmt.Errorf("no session line")
	}
	return c.id, nil
}

// An importer for a tool of one's own: a Mapper per file, and Run. The
// transcript grows by a line and a half (its writer still at work): the
// next import writes only the whole line, and the next the rest once it
// is whole.
func Example_mapper() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	file := filepath.Join(os.TempDir(), "example-chat.log")
	defer os.Remove(file)
	newMapper := func(path string) importer.Mapper { return &chatLog{} }
	write := func(s string) {
		f, _ := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		f.WriteString(s)
		f.Close()
	}

	write("# session s-1 in /home/dev/app\n2025-01-02T03:04:05Z user: Hello.\n")
	sum, _ := importer.Run(ctx, st, "chatlog", []string{file}, newMapper, importer.Options{})
	fmt.Printf("%+v, %d items\n", sum.Sessions, sum.Items)

	write("2025-01-02T03:04:06Z assistant: Hi!\n2025-01-02T03:04:09Z user")
	sum, _ = importer.Run(ctx, st, "chatlog", []string{file}, newMapper, importer.Options{})
	fmt.Printf("%+v, %d items, skipped %v\n", sum.Sessions, sum.Items, sum.Skipped)

	write(": Bye.\n")
	sum, _ = importer.Run(ctx, st, "chatlog", []string{file}, newMapper, importer.Options{})
	fmt.Printf("%+v, %d items\n", sum.Sessions, sum.Items)

	m, _ := st.Stat(ctx, recall.Key{Project: "-home-dev-app", Session: "s-1"})
	fmt.Println(m.ItemCount, m.Metadata[importer.MetaSource], m.Metadata[importer.MetaCwd])
	// Output:
	// {New:1 Updated:0 Unchanged:0}, 1 items
	// {New:0 Updated:1 Unchanged:0}, 1 items, skipped map[torn:1]
	// {New:0 Updated:1 Unchanged:0}, 1 items
	// 3 chatlog /home/dev/app
}

// Tell the sessions an import wrote from those recall wrote itself.
func ExampleSource() {
	imported := recall.Meta{Metadata: map[string]string{importer.MetaSource: "codex", importer.MetaSession: "0199a1b2"}}
	own := recall.Meta{Metadata: map[string]string{importer.MetaCwd: "/home/me/app"}}
	fmt.Println(importer.Source(imported), importer.Source(own))
	// Output: codex recall
}
