package filestore

import "fmt"

// IndexStat returns the "<ino> <size> <mtime-ns>" of the log at path, as
// the index writes them.
func IndexStat(path string) (string, error) {
	st, err := statPath(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %d %d", int64(st.ino), st.size, st.mtime), nil
}
