// Package payload holds the payloads of the entry kinds that only stores
// and tools read, so that package recall can check them while its
// documentation stays that of an application's API: package storekit
// names them for backend and tool authors (storekit.Redaction).
package payload

// Redaction is the payload of a recall.KindRedaction entry. The entries it
// lists were rewritten in place, with the same seqs and kinds, to remove
// the secrets they held (recall redact); the redaction entry is appended
// in the same atomic step as the rewrite, so a log that holds rewritten
// entries always says so. It records what was removed and where, never
// the secret itself. It is not activity: Meta.Updated does not move.
type Redaction struct {
	Entries []RedactedEntry `json:"entries"`
}

// RedactedEntry is one entry a redaction rewrote.
type RedactedEntry struct {
	Seq      int64     `json:"seq"`
	Findings []Finding `json:"findings"`
}

// Finding is one secret removed from an entry: the rule that found it
// and At, the byte offset of its marker ([REDACTED:rule]) in the
// rewritten entry's data.
type Finding struct {
	Rule string `json:"rule"`
	At   int    `json:"at"`
}

// Seqs returns the seqs of the entries r lists, in its order.
func (r Redaction) Seqs() []int64 {
	out := make([]int64, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = e.Seq
	}
	return out
}
