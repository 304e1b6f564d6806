// Package retention keeps sessions as long as a policy says, and no longer:
// a session whose last activity is older than its keep moves to the trash
// (recall.StoreSession.Trash), from where it can be restored until the
// trash's grace period ends. Nothing expires unless a policy says so, and
// a pinned session never expires: a pin is a legal hold.
//
// One Policy serves the CLI (recall gc applies a home's) and the service
// (recall serve applies its store's on a schedule, in one replica at a
// time, holding a Lease). The policy is kept in the store it governs, so
// every replica, and every machine that opens the store, applies the same
// one; each change is appended to its log, which keeps the earlier ones.
package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
)

// Keep is how long a session is kept after its last activity. The zero
// Keep is Never.
type Keep time.Duration

// Never keeps a session forever.
const Never Keep = 0

// ParseKeep reads a Keep: "never", or an age such as "90d", "1y" or "12h".
func ParseKeep(s string) (Keep, error) {
	if strings.TrimSpace(s) == "never" {
		return Never, nil
	}
	d, err := age.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("retention: %w (or never)", err)
	}
	return Keep(d), nil
}

// String returns "never" or the age, as ParseKeep reads it.
func (k Keep) String() string {
	if k == Never {
		return "never"
	}
	return age.Format(time.Duration(k))
}

// MarshalText implements encoding.TextMarshaler.
func (k Keep) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Keep) UnmarshalText(b []byte) error {
	v, err := ParseKeep(string(b))
	*k = v
	return err
}

// Policy says how long sessions are kept. A session's keep is, of the
// rules that name it, the first that applies of:
//
//  1. its labels' (the longest of them, when several labels have one);
//  2. its project's;
//  3. its user's, on a server (the user whose project it is);
//  4. Default.
//
// Never at any of them keeps the session. The zero Policy keeps
// everything.
type Policy struct {
	Default  Keep            `json:"default"`
	Projects map[string]Keep `json:"projects,omitempty"`
	Labels   map[string]Keep `json:"labels,omitempty"`
	Users    map[string]Keep `json:"users,omitempty"`
}

// IsZero reports whether p keeps every session forever.
func (p Policy) IsZero() bool {
	never := func(m map[string]Keep) bool {
		return !slices.ContainsFunc(slices.Collect(maps.Values(m)), func(k Keep) bool { return k != Never })
	}
	return p.Default == Never && never(p.Projects) && never(p.Labels) && never(p.Users)
}

// KeepFor returns the keep of the session m, whose user (on a server) is
// user; "" for none.
func (p Policy) KeepFor(m recall.Meta, user string) Keep {
	found, longest := false, Keep(0)
	for _, l := range m.Labels {
		if k, ok := p.Labels[l]; ok {
			if k == Never {
				return Never
			}
			found, longest = true, max(longest, k)
		}
	}
	if found {
		return longest
	}
	if k, ok := p.Projects[m.Key.Project]; ok {
		return k
	}
	if k, ok := p.Users[user]; ok && user != "" {
		return k
	}
	return p.Default
}

// Expired reports whether m is past its keep at now and goes to the
// trash: not pinned, not in the trash already, and last active longer
// than its keep ago.
func (p Policy) Expired(m recall.Meta, user string, now time.Time) bool {
	k := p.KeepFor(m, user)
	return k != Never && !m.Pinned && m.Trashed.IsZero() && m.Updated.Before(now.Add(-time.Duration(k)))
}

// String describes p in a line: "default 90d; project P never; label keep never".
func (p Policy) String() string {
	parts := []string{"default " + p.Default.String()}
	for _, r := range []struct {
		what  string
		rules map[string]Keep
	}{{"project", p.Projects}, {"label", p.Labels}, {"user", p.Users}} {
		for _, name := range slices.Sorted(maps.Keys(r.rules)) {
			parts = append(parts, r.what+" "+name+" "+r.rules[name].String())
		}
	}
	return strings.Join(parts, "; ")
}

// key is where a store keeps its policy: a session of the service's
// reserved project prefix ("_server."), which no listing shows and no
// user of the service reaches. Each Save appends the policy as an item.
var key = recall.Key{Project: "_server.retention", Session: "policy"}

// itemType marks a policy's item.
const itemType = "recall.retention_policy"

// Load returns the store's policy: the zero Policy when none was saved.
func Load(ctx context.Context, st recall.Store) (Policy, error) {
	live, _, err := st.Items(ctx, key, 1)
	if err != nil {
		return Policy{}, fmt.Errorf("retention: load the policy: %w", err)
	}
	if len(live) == 0 {
		return Policy{}, nil
	}
	var v struct {
		Type   string `json:"type"`
		Policy Policy `json:"policy"`
	}
	if err := json.Unmarshal(live[0].Item, &v); err != nil || v.Type != itemType {
		return Policy{}, fmt.Errorf("retention: the stored policy does not read (%v): %w", err, recall.ErrCorrupt)
	}
	return v.Policy, nil
}

// Save makes p the store's policy.
func Save(ctx context.Context, st recall.Store, p Policy) error {
	for name, rules := range map[string]map[string]Keep{"project": p.Projects, "label": p.Labels, "user": p.Users} {
		if _, ok := rules[""]; ok {
			return fmt.Errorf("retention: a %s rule needs a name: %w", name, ErrBadPolicy)
		}
	}
	b, err := json.Marshal(struct {
		Type   string `json:"type"`
		Policy Policy `json:"policy"`
	}{itemType, p})
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.NewEntry(recall.KindItem, json.RawMessage(b))); err != nil {
		return fmt.Errorf("retention: save the policy: %w", err)
	}
	return nil
}

// ErrBadPolicy reports a policy Save refuses.
var ErrBadPolicy = errors.New("retention: bad policy")
