package recall

// ForkLog exposes forkLog to the external tests.
var ForkLog = forkLog
