// Package crashsearch holds the crash test of search, for the stores that
// live in files beside a writer process (the file store and SQLite): a
// child process appends, and searches now and then, until it is killed
// with SIGKILL; the next search, in a new process, must find every item
// the child saw acknowledged. It has no code but its tests.
package crashsearch
