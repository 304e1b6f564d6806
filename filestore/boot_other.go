//go:build !linux && !darwin

package filestore

// bootID is empty where the store knows no name for the running boot: an
// index journal is then never trusted on its own, and List checks every
// log's stat against it.
func bootID() string { return "" }
