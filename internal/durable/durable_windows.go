package durable

// SyncDir does nothing on Windows, where a directory cannot be opened for
// FlushFileBuffers. It need not: NTFS journals its metadata, so a file's
// creation or removal, and the rename that os.Rename makes with
// MoveFileEx(MOVEFILE_REPLACE_EXISTING), is durable once the journal is,
// without a flush of the directory.
func SyncDir(dir string) error { return nil }
