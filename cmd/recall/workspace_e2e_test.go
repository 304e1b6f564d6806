package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fakeopenai"
)

// TestResumeOtherProjectSwitchesWorkspace: a session records the folder
// it was created in; resumed from another folder, its tools run in its own
// project's folder (said on stderr) and its turns stay in its project. A
// session that records no folder, or whose folder is gone, is resumed
// with its tools off, with a note: nothing runs in the folder recall was
// started in.
func TestResumeOtherProjectSwitchesWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := fakeServer(t, e, "responses")
	home := e.folder()
	e.ok("", "chat", "-p", "start here")
	m, _ := e.show(e.ls()[0].Key.Session)
	if m.Metadata[cwdKey] != home {
		t.Fatalf("the new session records folder %q, want %q", m.Metadata[cwdKey], home)
	}

	elsewhere := t.TempDir()
	write := func(name string) fakeopenai.Reply {
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "write_file", Arguments: `{"path":"` + name + `","content":"x"}`}}}
	}
	srv.Enqueue(write("from-elsewhere.txt"), fakeopenai.Reply{Text: "done"})
	r := e.runIn(elsewhere, "", "chat", "-r", m.Key.Session[:8], "-p", "write a file")
	if r.code != 0 {
		t.Fatalf("resume from elsewhere: exit %d\n%s", r.code, r.stderr)
	}
	contains(t, "stderr", r.stderr, "workspace: "+home)
	if _, err := os.Stat(filepath.Join(home, "from-elsewhere.txt")); err != nil {
		t.Errorf("the tool did not write in the session's project: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "from-elsewhere.txt")); err == nil {
		t.Error("the tool wrote in the folder recall was started in")
	}
	// The turns stay in the session's project; the other folder has none.
	if ms := e.ls(); len(ms) != 1 || ms[0].ItemCount != 6 {
		t.Errorf("the project's sessions after the resume: %+v", ms)
	}
	if r := e.runIn(elsewhere, "", "ls", "--json"); r.code != 0 || !jsonHasNoSessions(r.stdout) {
		t.Errorf("ls in the other folder: exit %d\n%s", r.code, r.stdout)
	}

	// A session without a recorded folder (made before recall recorded
	// it), and one whose folder is gone: tools off, with a note.
	old := "0badc0de-1111-4111-8111-111111111111"
	e.plant(e.dir, nil, old)
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	movedKey, _ := recall.ProjectKey(gone)
	e.plant(gone, map[string]string{cwdKey: gone}, "90e90e90-2222-4222-8222-222222222222")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ref, note string }{
		{old, "whose folder this session does not record"},
		{movedKey + "/90e90e90-2222-4222-8222-222222222222", "whose folder " + gone + " no longer exists"},
	} {
		before := len(srv.Requests())
		srv.Enqueue(write("no-tools.txt"), fakeopenai.Reply{Text: "done"})
		r := e.runIn(elsewhere, "", "chat", "--resume="+c.ref, "-p", "write a file")
		if r.code != 0 {
			t.Fatalf("resume %s: exit %d\n%s", c.ref, r.code, r.stderr)
		}
		contains(t, "stderr", r.stderr, c.note)
		contains(t, "stderr", r.stderr, "its tools are off")
		for _, dir := range []string{home, elsewhere} {
			if _, err := os.Stat(filepath.Join(dir, "no-tools.txt")); err == nil {
				t.Errorf("%s: a tool ran in %s", c.ref, dir)
			}
		}
		if reqs := srv.Requests(); len(reqs) <= before || len(reqs[before].ToolNames()) != 0 {
			t.Errorf("%s: the model was offered tools: %v", c.ref, reqs[before].ToolNames())
		}
	}
}

// folder returns e's project directory with its symlinks resolved: the
// folder recall chat records for a session made there.
func (e *env) folder() string {
	e.t.Helper()
	dir, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	return dir
}

// jsonHasNoSessions reports whether an ls --json output lists no
// session: an empty array, or an object whose "sessions" is one.
func jsonHasNoSessions(s string) bool {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return false
	}
	if obj, ok := v.(map[string]any); ok {
		v = obj["sessions"]
	}
	list, ok := v.([]any)
	return ok && len(list) == 0
}
