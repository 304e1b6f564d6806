package storekit

import "time"

// Now returns the current time as stores record it: UTC, truncated to the
// microsecond, the precision every backend (PostgreSQL included) keeps, so
// times and list cursors compare equal across stores.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
