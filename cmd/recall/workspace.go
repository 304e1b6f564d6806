package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/agent/workspace"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/gitremote"
)

// cwdKey is the session metadata key under which recall chat records the
// folder a session was created in: its project's folder. A project key is
// lossy (every byte outside [A-Za-z0-9] became '-'), so this is how a
// session resumed from elsewhere finds its files. recall import records an
// imported session's folder under the same key.
const cwdKey = importer.MetaCwd

// chatWorkspaces keeps the agent's tools in the folder of the current
// session's project. recall chat starts in one folder (home); resuming a
// session of another project moves the tools to that project's folder,
// recorded in the session's metadata, or turns them off when the folder
// is unknown or gone, so a session's tools never run in another
// project's files. Its turns are stored under its own key either way.
type chatWorkspaces struct {
	home        string       // the folder recall chat runs in, absolute
	homeProject string       // its project key
	homeTools   []agent.Tool // the home workspace's tools
	// other is the workspace opened for another project's session, nil
	// when the tools are home's or off.
	other *workspace.Workspace
	// record is set while the current session is new: its first write
	// records home under cwdKey.
	record bool
	// awayInstr is the agent's instructions while the tools are away from
	// home ("" when home), and homeInstr those they replaced (which the
	// project memory may have set), put back on coming home unless the
	// memory has set newer ones meanwhile.
	awayInstr, homeInstr string
}

// newChatWorkspaces returns the workspaces of a chat that runs in dir
// (project key project) with the tools of ws.
func newChatWorkspaces(dir, project string, ws *workspace.Workspace) *chatWorkspaces {
	return &chatWorkspaces{home: dir, homeProject: project, homeTools: ws.Tools()}
}

// close releases the workspace opened for another project.
func (w *chatWorkspaces) close() {
	if w.other != nil {
		w.other.Close()
		w.other = nil
	}
}

// followWorkspace points the agent's tools at the folder of the session m
// (exists false: a new session of the home project) and says so on
// stderr when that is not the folder recall chat runs in.
func (c *chatSession) followWorkspace(m recall.Meta, exists bool) {
	w := c.workspaces
	if w == nil {
		return
	}
	w.close()
	w.record = !exists
	if !exists || m.Key.Project == w.homeProject {
		c.agent.Tools = w.homeTools
		if w.awayInstr != "" && c.agent.Instructions == w.awayInstr {
			c.agent.Instructions = w.homeInstr
		}
		w.awayInstr = ""
		return
	}
	away := func(tools []agent.Tool, instr string) {
		if w.awayInstr == "" || c.agent.Instructions != w.awayInstr {
			w.homeInstr = c.agent.Instructions
		}
		c.agent.Tools, c.agent.Instructions, w.awayInstr = tools, instr, instr
	}
	dir, why := projectFolder(m)
	if why != "" {
		away(nil, noToolsInstructions)
		c.app.notef("note: session %s belongs to project %s, %s; its tools are off (run recall chat in that project's folder to use them)\n",
			m.Key.Session, m.Key.Project, why)
		return
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		away(nil, noToolsInstructions)
		c.app.notef("note: session %s belongs to project %s, whose folder %s cannot be opened (%v); its tools are off\n",
			m.Key.Session, m.Key.Project, dir, err)
		return
	}
	w.other = ws
	away(ws.Tools(), instructions(dir))
	c.app.notef("workspace: %s (session %s belongs to that project)\n", dir, m.Key.Session)
}

// projectFolder returns the folder of m's project, as recorded when the
// session was created, or why it cannot be used.
func projectFolder(m recall.Meta) (dir, why string) {
	dir = m.Metadata[cwdKey]
	if dir == "" {
		return "", "whose folder this session does not record (it was created before recall chat recorded it, or by another program)"
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Sprintf("whose recorded folder %q is not an absolute path", dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Sprintf("whose folder %s no longer exists", dir)
	}
	if p, err := recall.ProjectKey(dir); err != nil || p != m.Key.Project {
		return "", fmt.Sprintf("but its recorded folder %s is now another project", dir)
	}
	return dir, ""
}

// folderMetadata is what a session made in dir records of its folder:
// the folder (cwdKey) and, when it is in a git checkout, the checkout's
// remote URL (importer.MetaGitRemote), by which recall sync finds the
// project on another machine.
func folderMetadata(dir string) map[string]string {
	md := map[string]string{cwdKey: dir}
	if r := gitremote.Of(dir); r != "" {
		md[importer.MetaGitRemote] = r
	}
	return md
}

// noToolsInstructions are the agent's instructions while its tools are
// off: it works from the conversation alone.
const noToolsInstructions = "You are a helpful assistant. This conversation's project folder is not available here, so you have no tools: " +
	"answer from the conversation, and say so when a request needs its files. Be concise."

// recordWorkspace records the folder recall chat runs in under cwdKey in
// the current session's metadata, once, after the first write of a new
// session has created it.
func (c *chatSession) recordWorkspace(ctx context.Context) error {
	w := c.workspaces
	if w == nil || !w.record {
		return nil
	}
	w.record = false
	md := map[string]*string{}
	for k, v := range folderMetadata(w.home) {
		md[k] = &v
	}
	if _, err := recall.NewSession(c.st, c.key).ChangeMeta(ctx, recall.MetaChange{Metadata: md}); err != nil {
		return fmt.Errorf("record the session's folder: %w", err)
	}
	return nil
}
