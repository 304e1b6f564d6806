//go:build !linux && !darwin

package fsys

// BootID is empty where the store knows no name for the running boot: an
// index journal is then never trusted on its own, and List checks every
// log's stat against it.
func BootID() string { return "" }
