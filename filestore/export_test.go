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

// TrustedLists returns how many times a project's records were taken from
// its journal alone, without a stat of every log.
func TrustedLists() int64 { return trustedLists.Load() }

// SetPageCheck turns List's stat of the logs of the page it returns on or
// off, and returns the previous setting: off, List shows what the journal
// says.
func SetPageCheck(on bool) bool {
	old := checkPage
	checkPage = on
	return old
}
