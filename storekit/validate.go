package storekit

import (
	"fmt"

	"github.com/recallkit/recall"
)

// ValidateEntries checks a batch before a store writes any of it, each
// entry with recall.Entry.Validate: every item entry holds a valid item no
// larger than max, and every known kind's payload decodes. The error names
// the first bad entry and wraps recall.ErrInvalidItem,
// recall.ErrInvalidMetadata or recall.ErrTooLarge.
func ValidateEntries(entries []recall.Entry, max int) error {
	for i, e := range entries {
		if err := e.Validate(max); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}
